package keyset_test

import (
	"fmt"

	"novaos.dev/novaos/store/keyset"
)

func ExampleTask() {
	tok := keyset.Task{TimeMs: 1767225600123, ID: "task-7"}.Token()
	cur, err := keyset.ParseTask(tok)
	fmt.Println(cur.TimeMs, cur.ID, err)
	_, err = keyset.ParseTask("garbage")
	fmt.Println(err)
	// Output:
	// 1767225600123 task-7 <nil>
	// keyset: malformed page token
}
