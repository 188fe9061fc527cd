package tools_test

import (
	"testing"

	"novaos.dev/novaos/store/storetest"
	"novaos.dev/novaos/tools"
)

func TestMemoryServerStoreContract(t *testing.T) {
	storetest.TestToolServerStore(t, func(t *testing.T) tools.ServerStore { return tools.NewMemoryServerStore() })
}
