// Command mailer is an A2A agent that opens the secrets sent to it.
// The platform, or novaos send --secret, seals each secret to one of the
// agent's recipient keys (user-context/v1); the agent's key ring, a
// directory of private JWKs made by novaos keys generate, opens them.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"

	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/usercontext"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9001", "address to listen on")
	keys := flag.String("keys", "./mailer-keys", "directory of the agent's private recipient keys")
	flag.Parse()

	a := agent.New("mailer", "1.0.0", &agent.Options{
		Description: "Sends reports by mail",
		// With a key ring, the card declares the user-context extension.
		KeyRing: usercontext.NewKeyRing(*keys),
	})
	a.MustRegister(agent.Skill{
		ID:          "send",
		Description: "Sends a report with the caller's SMTP password",
		Handler: func(c *agent.Context) (agent.Result, error) {
			pw, err := c.GetSecret("SMTP_PASSWORD")
			if err != nil {
				c.Logger().Warn("no password", "delivered", c.SecretNames())
				return agent.Result{}, err
			}
			// pw prints, logs and marshals as [REDACTED]; Reveal is the
			// one way to the value, for the SMTP client.
			return agent.Result{Output: fmt.Sprintf("would send %q with a password of %d characters (%v)",
				c.Input(), len(pw.Reveal()), pw)}, nil
		},
	})
	url := "http://" + *addr
	log.Printf("mailer is serving on %s", url)
	log.Fatal(http.ListenAndServe(*addr, a.Handler(url, nil)))
}
