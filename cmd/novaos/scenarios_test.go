package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/platformtest"
	"novaos.dev/novaos/secret"
)

// The delivery scenarios against the real `novaos serve` on SQLite, over
// polling and over the gateway. The platform runs with short token and
// ack times, since here they pass in real time.
func TestScenariosOnTheRealServer(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	const admin = "scenario-admin-token-0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tokenFile, []byte(admin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	timing := platformtest.Timing{TokenTTL: 6 * time.Second, ClockLeeway: time.Second, AckTimeout: 3 * time.Second}
	echo, stop := serve(t, bin, data, "--admin-token-file", tokenFile,
		"--delivery-token-ttl", timing.TokenTTL.String(), "--delivery-clock-leeway", timing.ClockLeeway.String(),
		"--delivery-ack-timeout", timing.AckTimeout.String())
	defer stop(syscall.SIGTERM)
	base := strings.TrimSuffix(echo, "/agents/echo")

	settings := adapter.DefaultSettings()
	settings.InvocationTokenLeeway = timing.ClockLeeway
	t.Run("scenarios", func(t *testing.T) {
		for _, sc := range platformtest.Scenarios {
			for _, gateway := range []bool{false, true} {
				name := sc.Name + "/polling"
				if gateway {
					name = sc.Name + "/gateway"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					s := platformtest.NewRemoteServer(t, platformtest.RemoteOptions{URL: base, AdminToken: secret.New(admin),
						Tenant: "acme", KeyFile: filepath.Join(data, "delivery.key"), Timing: timing})
					sc.Run(t, s, &platformtest.ScenarioOptions{Gateway: gateway, Settings: &settings})
				})
			}
		}
	})
}
