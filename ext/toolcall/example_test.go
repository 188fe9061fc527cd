package toolcall_test

import (
	"encoding/json"
	"fmt"

	"novaos.dev/novaos/ext/toolcall"
)

func Example() {
	md := toolcall.Metadata(toolcall.Payload{ToolCallID: "call_1", Name: "file_bug", Phase: toolcall.PhaseCompleted, Result: "BUG-12"})
	b, _ := json.Marshal(md)
	fmt.Println(string(b))

	// A streaming client checks every status-update message.
	p, ok, err := toolcall.Parse(md)
	if ok && err == nil {
		fmt.Println(p.Name, p.Phase, p.Result)
	}
	// Output:
	// {"https://proto-labs.ai/a2a/ext/tool-call-v1":{"toolCallId":"call_1","name":"file_bug","phase":"completed","result":"BUG-12"}}
	// file_bug completed BUG-12
}
