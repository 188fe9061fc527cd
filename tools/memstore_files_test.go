package tools_test

import (
	"testing"

	"novaos.dev/novaos/store/storetest"
	"novaos.dev/novaos/tools"
)

func TestMemoryFileStoreContract(t *testing.T) {
	storetest.TestFileStore(t, func(t *testing.T) tools.FileStore { return tools.NewMemoryFileStore() })
}

// One MemoryFileStore serves every handle of a process: the replica
// suite's races run against it from several goroutines.
func TestMemoryFileStoreReplicas(t *testing.T) {
	storetest.TestFileReplicas(t, func(t *testing.T) func() tools.FileStore {
		s := tools.NewMemoryFileStore()
		return func() tools.FileStore { return s }
	})
}
