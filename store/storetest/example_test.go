package storetest_test

import (
	"testing"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/storetest"
)

// A store package runs the contract from its own tests, handing the suite a
// constructor for fresh, empty stores.
func ExampleTestTaskStore() {
	_ = func(t *testing.T) {
		storetest.TestTaskStore(t, func(t *testing.T) a2asrv.TaskStore {
			return a2asrv.NewMemoryTaskStore(nil)
		})
		storetest.TestPushConfigStore(t, func(t *testing.T) a2asrv.PushConfigStore {
			return a2asrv.NewMemoryPushConfigStore(nil)
		})
	}
}
