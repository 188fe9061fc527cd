package usercontext_test

import (
	"encoding/json"
	"fmt"
	"os"

	"novaos.dev/novaos/ext/usercontext"
)

// The platform seals a run's secrets to the agent's public key; the agent
// opens them with the key ring over its key directory.
func Example() {
	dir, _ := os.MkdirTemp("", "agent-keys")
	defer os.RemoveAll(dir)

	// Provisioning: one key pair per agent; the private JWK goes into the
	// agent's key directory, the public half to the sealing side.
	key, _ := usercontext.GenerateKey()
	_ = usercontext.WriteKeyFile(dir, key)
	recipient := key.Recipient()

	// Platform side: seal, and send the payload at metadata[usercontext.URI].
	run := usercontext.Run{TenantID: "acme", InstanceID: "mailer-1", RunID: "run-42"}
	payload, _ := usercontext.SealPayload(recipient, run, map[string]usercontext.Secret{
		"SMTP_PASSWORD": usercontext.NewSecret("hunter2"),
	})
	wire, _ := json.Marshal(map[string]any{usercontext.URI: payload})

	// Agent side: parse the payload, open one secret for this run.
	var metadata map[string]any
	_ = json.Unmarshal(wire, &metadata)
	sealed, _ := usercontext.ParsePayload(metadata[usercontext.URI])
	ring := usercontext.NewKeyRing(dir)
	password, err := sealed.Open(ring, run, "SMTP_PASSWORD")
	fmt.Println(sealed.Names(), err)
	fmt.Println(password)          // redacted
	fmt.Println(password.Reveal()) // the value, for the one place that needs it

	// The same envelope does not open for another run.
	_, err = sealed.Open(ring, usercontext.Run{TenantID: "acme", InstanceID: "mailer-1", RunID: "run-43"}, "SMTP_PASSWORD")
	fmt.Println(err)
	// Output:
	// [SMTP_PASSWORD] <nil>
	// [REDACTED]
	// hunter2
	// usercontext: open "SMTP_PASSWORD": usercontext: sealed envelope did not open
}
