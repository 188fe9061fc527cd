package a2apb_test

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"novaos.dev/novaos/a2a/a2apb"
)

func Example() {
	msg := &a2apb.Message{
		MessageId: "m-1",
		Role:      a2apb.Role_ROLE_USER,
		Parts:     []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "hello"}}},
	}
	wire, err := proto.Marshal(msg)
	if err != nil {
		fmt.Println(err)
		return
	}
	var back a2apb.Message
	if err := proto.Unmarshal(wire, &back); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(back.GetParts()[0].GetText(), back.GetRole())
	fmt.Println(a2apb.A2AService_SendMessage_FullMethodName)
	// Output:
	// hello ROLE_USER
	// /lf.a2a.v1.A2AService/SendMessage
}
