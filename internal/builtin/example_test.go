package builtin_test

import (
	"fmt"

	"novaos.dev/novaos/internal/builtin"
)

func ExampleEcho() {
	card := builtin.Echo().CardAt("http://127.0.0.1:8080/agents/echo")
	fmt.Println(card.Name, card.Skills[0].ID, card.SupportedInterfaces[0].URL)
	// Output: echo echo http://127.0.0.1:8080/agents/echo
}

func ExampleTCK() {
	card := builtin.TCK().Card()
	fmt.Println(card.Name, card.Skills[0].ID, *card.Capabilities.Streaming)
	// Output: tck tck true
}
