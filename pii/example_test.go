package pii_test

import (
	"fmt"
	"log/slog"
	"os"

	"novaos.dev/novaos/pii"
)

func ExampleMask() {
	fmt.Println(pii.Mask("mail jane@example.com or call 555-123-4567, SSN 123-45-6789"))
	// Output: mail [EMAIL] or call [PHONE], SSN [SSN]
}

func ExampleMaskMap() {
	m := pii.MaskMap(map[string]any{"note": "card 4111 1111 1111 1111", "password": "hunter2"})
	fmt.Println(m["note"], m["password"])
	// Output: card [CARD] [REDACTED]
}

func ExampleNewHandler() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	log := slog.New(pii.NewHandler(h))
	log.Info("signed up", "user", "jane@example.com", "token", "abc123")
	// Output: level=INFO msg="signed up" user=[EMAIL] token=[REDACTED]
}
