package interop

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	goa2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/tlscert/certtest"
)

// The platform server with both listeners over TLS (serve --tls-cert),
// its certificate issued by a CA made for the test.
func startTLSServer(t *testing.T) (*app.Server, *certtest.CA, string) {
	t.Helper()
	ca := certtest.NewCA(t)
	dir := t.TempDir()
	cert, key := ca.Issue(t, "127.0.0.1").WritePEM(t, dir)
	srv := startApp(t, &app.Options{
		HTTP:   app.HTTPOptions{TLSCertFile: cert, TLSKeyFile: key},
		Agents: app.AgentOptions{GRPCAddr: "127.0.0.1:0"},
	})
	return srv, ca, ca.WriteCAFile(t, dir)
}

// The a2a-go v2.3.1 CLI over HTTPS, trusting the CA the way any Go
// program on Linux can be told to: SSL_CERT_FILE. Its gRPC transport has
// no TLS option (only --insecure, plaintext), so gRPC over TLS is shown
// with a2a-go's library below.
func TestGoCLIOverTLS(t *testing.T) {
	cli := goCLI(t)
	srv, _, caFile := startTLSServer(t)
	echo := srv.URL() + "/agents/echo"
	if !strings.HasPrefix(echo, "https://") {
		t.Fatalf("agent URL %q, want https://", echo)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"card", []string{"send", echo, "hello over TLS from the card"}},
		{"jsonrpc", []string{"send", "--transport", "jsonrpc", echo, "hello over jsonrpc and TLS"}},
		{"rest", []string{"send", "--transport", "rest", echo, "hello over rest and TLS"}},
		{"rest streamed", []string{"send", "--transport", "rest", "--stream", echo, "streamed over rest and TLS"}},
		{"jsonrpc streamed", []string{"send", "--transport", "jsonrpc", "--stream", echo, "streamed over jsonrpc and TLS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, cli, append(tc.args, "-o", "json")...)
			cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+caFile, "SSL_CERT_DIR=")
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
	// Without the CA the CLI refuses the certificate.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, cli, "send", "--transport", "jsonrpc", echo, "untrusted")
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+os.DevNull, "SSL_CERT_DIR="+os.DevNull)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "certificate") {
		t.Errorf("a2a send without the CA: %v, stderr %q; want a certificate error", err, stderr.String())
	}
}

// a2a-go's library over every binding with TLS: the card resolved over
// HTTPS, JSON-RPC and HTTP+JSON from it, gRPC with TLS credentials at the
// address the card names (its https:// URL's host:port, the target
// grpc.NewClient takes, as the a2a-go CLI strips it).
func TestGoClientOverTLS(t *testing.T) {
	srv, ca, _ := startTLSServer(t)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientConfig()}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	card, err := agentcard.NewResolver(hc).Resolve(ctx, srv.URL()+"/agents/echo")
	if err != nil {
		t.Fatalf("resolve the card over TLS: %v", err)
	}
	var grpcURL string
	for _, in := range card.SupportedInterfaces {
		if !strings.HasPrefix(in.URL, "https://") {
			t.Errorf("card interface %s at %q, want an https:// URL", in.ProtocolBinding, in.URL)
		}
		if in.ProtocolBinding == goa2a.TransportProtocolGRPC {
			grpcURL = in.URL
		}
	}
	creds := grpc.WithTransportCredentials(credentials.NewTLS(ca.ClientConfig()))
	for _, b := range []goa2a.TransportProtocol{goa2a.TransportProtocolJSONRPC, goa2a.TransportProtocolHTTPJSON} {
		t.Run(string(b), func(t *testing.T) {
			c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []goa2a.TransportProtocol{b}}),
				a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Destroy()
			goSendOverTLS(t, ctx, c, "hello over "+string(b))
		})
	}
	t.Run("GRPC", func(t *testing.T) {
		u, err := url.Parse(grpcURL)
		if err != nil || u.Scheme != "https" {
			t.Fatalf("gRPC interface URL %q, want https://host:port", grpcURL)
		}
		iface := goa2a.NewAgentInterface(u.Host, goa2a.TransportProtocolGRPC)
		iface.Tenant = "echo"
		c, err := a2aclient.NewFromEndpoints(ctx, []*goa2a.AgentInterface{iface}, goa2agrpc.WithGRPCTransport(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Destroy()
		goSendOverTLS(t, ctx, c, "hello over gRPC")
	})
}

func goSendOverTLS(t *testing.T, ctx context.Context, c *a2aclient.Client, text string) {
	t.Helper()
	res, err := c.SendMessage(ctx, &goa2a.SendMessageRequest{Message: goUserMessage(text)})
	if err != nil {
		t.Fatalf("SendMessage over TLS: %v", err)
	}
	task, ok := res.(*goa2a.Task)
	if !ok || task.Status.State != goa2a.TaskStateCompleted || len(task.Artifacts) == 0 || !strings.Contains(goText(task.Artifacts[0].Parts), text) {
		t.Fatalf("SendMessage result %+v", res)
	}
}
