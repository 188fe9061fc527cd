package sqlstore_test

import (
	"fmt"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/store/internal/sqlstore"
)

func ExampleStateList() {
	fmt.Println("WHERE state IN " + sqlstore.StateList([]a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking}))
	// Output: WHERE state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')
}
