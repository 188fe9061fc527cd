package tools_test

import (
	"testing"

	"novaos.dev/novaos/store/storetest"
	"novaos.dev/novaos/tools"
)

func TestMemKnowledgeStore(t *testing.T) {
	storetest.TestKnowledgeStore(t, func(t *testing.T) tools.KnowledgeStore { return tools.NewMemKnowledgeStore() })
}
