package secret_test

import (
	"fmt"

	"novaos.dev/novaos/secret"
)

func Example() {
	token := secret.New("s3cr3t-admin-token")
	fmt.Println(token)
	fmt.Printf("%v %q %+v\n", token, token, struct{ Token secret.Value }{token})
	fmt.Println(token.Equal("guess"), token.Equal("s3cr3t-admin-token"))
	// Output:
	// [REDACTED]
	// [REDACTED] [REDACTED] {Token:[REDACTED]}
	// false true
}
