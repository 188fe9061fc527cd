package gate_test

import (
	"fmt"

	"novaos.dev/novaos/gate"
)

// The canonical form ignores how a document is spelt, and refuses a number
// that would silently lose digits.
func ExampleCanonicalize() {
	out, err := gate.Canonicalize([]byte(`{ "b": [1.0, 10e-1, "\u00e9\/"], "a": 0.50 }`))
	fmt.Println(string(out), err)
	_, err = gate.Canonicalize([]byte(`{"amount": 0.30000000000000001}`))
	fmt.Println(err)
	// Output:
	// {"a":0.5,"b":[1,1,"é/"]} <nil>
	// gate: canonicalize: number_precision at byte 11: decimal value is not exactly a double's shortest form (too many digits, or underflow)
}

// The SDK fingerprints the typed context it sends; the service
// fingerprints the raw context it received, however the client spelt it.
// A different amount is a different commitment.
func ExampleFingerprint() {
	amount := 100.0
	sdk, _ := gate.Fingerprint("refund", gate.CSContext{CustomerID: "c-1", Amount: &amount})
	service, _ := gate.FingerprintJSON("refund", gate.ContextCS, []byte(`{"amount": 100.00, "customer_id": "c-1"}`))
	other, _ := gate.FingerprintJSON("refund", gate.ContextCS, []byte(`{"amount": 100.01, "customer_id": "c-1"}`))
	fmt.Println(gate.FingerprintScheme, len(sdk), sdk == service, sdk == other)
	// Output:
	// sha256-jcs-1 64 true false
}
