package tools_test

import (
	"testing"

	"novaos.dev/novaos/store/storetest"
	"novaos.dev/novaos/tools"
)

func TestMemStoreContract(t *testing.T) {
	storetest.TestToolStore(t, func(t *testing.T) tools.Store { return tools.NewMemStore() })
}
