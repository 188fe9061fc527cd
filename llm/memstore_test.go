package llm_test

import (
	"testing"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/store/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	storetest.TestLLMStore(t, func(t *testing.T) llm.Store { return llm.NewMemoryStore() })
}
