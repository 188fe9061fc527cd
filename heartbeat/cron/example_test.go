package cron_test

import (
	"fmt"
	"time"

	"novaos.dev/novaos/heartbeat/cron"
)

func ExampleParse() {
	s, err := cron.Parse("30 2 * * *")
	if err != nil {
		fmt.Println(err)
		return
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		fmt.Println(err)
		return
	}
	// 02:30 does not exist on the spring-forward night: it fires when the
	// gap ends.
	at := time.Date(2026, 3, 7, 12, 0, 0, 0, ny)
	for range 2 {
		at, _ = s.Next(at, ny)
		fmt.Println(at.Format("2006-01-02 15:04 MST"))
	}
	_, err = cron.Parse("0 25 * * *")
	fmt.Println(err)
	// Output:
	// 2026-03-08 03:00 EDT
	// 2026-03-09 02:30 EDT
	// cron: hour: "25" is out of range 0-23
}
