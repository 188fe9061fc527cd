package a2agrpc_test

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2apb"
)

// A server converts the request it received into the wire model, answers
// with a model value converted back, and turns its errors into statuses;
// a client reads the status back as the *a2a.Error the JSON-RPC client
// would have returned.
func Example() {
	in := &a2apb.SendMessageRequest{Message: &a2apb.Message{
		MessageId: "m-1",
		Role:      a2apb.Role_ROLE_USER,
		Parts:     []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "What is 2 + 2?"}}},
	}}
	req, err := a2agrpc.SendMessageRequestFromPB(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(req.Message.Role, req.Message.Text())

	task := &a2a.Task{ID: "t-1", ContextID: "c-1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
		Artifacts: []a2a.Artifact{{ArtifactID: "a-1", Parts: []a2a.Part{a2a.TextPart("4")}}}}
	out, err := a2agrpc.SendMessageResponseToPB(&a2a.SendMessageResponse{Task: task})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.GetTask().GetStatus().GetState(), proto.Size(out) > 0)

	// A part with no content is refused, as the JSON reader refuses it.
	_, err = a2agrpc.SendMessageRequestFromPB(&a2apb.SendMessageRequest{Message: &a2apb.Message{Parts: []*a2apb.Part{{}}}})
	fmt.Println(err)

	st := a2agrpc.Status(a2a.NewError(a2a.CodeTaskNotCancelable, "task t-1 is completed"))
	fmt.Println(st.Code(), st.Message())
	e := a2agrpc.Error(st.Err())
	fmt.Println(e.Code == a2a.CodeTaskNotCancelable, e.Message)
	// Output:
	// ROLE_USER What is 2 + 2?
	// TASK_STATE_COMPLETED true
	// a2agrpc: message.parts[0]: a part must carry exactly one of text, raw, url or data
	// FailedPrecondition task t-1 is completed
	// true task t-1 is completed
}
