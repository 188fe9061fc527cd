package interop

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/internal/app"
)

// The a2a-go v2.3.1 CLI (cmd/a2a, a tool of this module) against the real
// platform server (internal/app, as novaos serve runs it, with the gRPC
// binding on): the user's view of "call a NovaOS agent with the a2a-go CLI
// over any of the three bindings".

var (
	goCLIOnce sync.Once
	goCLIPath string
	goCLIErr  error
)

// goCLI builds the a2a-go CLI once per test binary.
func goCLI(t *testing.T) string {
	t.Helper()
	goCLIOnce.Do(func() {
		dir, err := os.MkdirTemp("", "a2a-go-cli-")
		if err != nil {
			goCLIErr = err
			return
		}
		goCLIPath = filepath.Join(dir, "a2a")
		out, err := exec.Command("go", "build", "-o", goCLIPath, "github.com/a2aproject/a2a-go/v2/cmd/a2a").CombinedOutput()
		if err != nil {
			goCLIErr = fmt.Errorf("go build the a2a-go CLI: %v\n%s", err, out)
		}
	})
	if goCLIErr != nil {
		t.Fatal(goCLIErr)
	}
	return goCLIPath
}

func TestGoCLI(t *testing.T) {
	cli := goCLI(t)
	srv := startApp(t, &app.Options{Agents: app.AgentOptions{GRPCAddr: "127.0.0.1:0"}})
	echo := srv.URL() + "/agents/echo"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"card", []string{"send", echo, "hello from the card"}},
		{"jsonrpc", []string{"send", "--transport", "jsonrpc", echo, "hello over jsonrpc"}},
		{"rest", []string{"send", "--transport", "rest", echo, "hello over rest"}},
		{"grpc", []string{"send", "--transport", "grpc", "--insecure", "--tenant", "echo", srv.GRPCAddr(), "hello over grpc"}},
		{"rest streamed", []string{"send", "--transport", "rest", "--stream", echo, "streamed over rest"}},
		{"grpc streamed", []string{"send", "--transport", "grpc", "--insecure", "--tenant", "echo", "--stream", srv.GRPCAddr(), "streamed over grpc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, cli, append(tc.args, "-o", "json")...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("a2a %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), err, stdout.String(), stderr.String())
			}
			text := tc.args[len(tc.args)-1]
			out := stdout.String()
			if !strings.Contains(out, text) || !strings.Contains(out, "TASK_STATE_COMPLETED") && !strings.Contains(out, `"completed"`) {
				t.Fatalf("a2a %s printed no completed echo of %q:\n%s", strings.Join(tc.args, " "), text, out)
			}
		})
	}
}

// startApp starts a NovaOS server with opts on a free loopback port and a
// data directory of the test's, quiet, and shuts it down with the test.
func startApp(t *testing.T, opts *app.Options) *app.Server {
	t.Helper()
	o := *opts
	o.Addr, o.DataDir, o.Logger = "127.0.0.1:0", t.TempDir(), slog.New(slog.DiscardHandler)
	srv, err := app.New(context.Background(), &o)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv
}
