package a2astore_test

import (
	"fmt"

	"novaos.dev/novaos/a2a/a2astore"
)

func ExampleTask() {
	tok := a2astore.Task{TimeMs: 1767225600123, ID: "task-7"}.Token()
	cur, err := a2astore.ParseTask(tok)
	fmt.Println(cur.TimeMs, cur.ID, err)
	_, err = a2astore.ParseTask("garbage")
	fmt.Println(err)
	// Output:
	// 1767225600123 task-7 <nil>
	// a2astore: malformed page token
}
