package tools_test

import (
	"testing"

	"novaos.dev/novaos/store/storetest"
	"novaos.dev/novaos/tools"
)

func TestMemStoreContract(t *testing.T) {
	storetest.TestToolStore(t, func(t *testing.T) tools.Store { return tools.NewMemStore() })
}

// One MemStore serves every handle of a process.
func TestMemStoreReplicas(t *testing.T) {
	storetest.TestToolReplicas(t, func(t *testing.T) func() tools.Store {
		s := tools.NewMemStore()
		return func() tools.Store { return s }
	})
}
