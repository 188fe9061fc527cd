package grpcclient_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcsrv"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/tlscert/certtest"
)

// serveTLS serves the agent over gRPC with TLS on loopback, with a
// certificate of a throwaway CA, and returns its address.
func serveTLS(t *testing.T, ca *certtest.CA) string {
	t.Helper()
	card := &a2a.AgentCard{Name: "echo", Version: "1", DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}}
	h := a2asrv.NewHandler(card, a2asrv.ExecutorFunc(agent), nil)
	cert, key := ca.Issue(t, "127.0.0.1").PEM(t)
	pair, err := tlsPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(pair)))
	grpcsrv.NewMux(map[string]*a2asrv.Handler{"echo": h}).Register(g)
	go g.Serve(lis)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		h.Shutdown(ctx)
		g.Stop()
	})
	return lis.Addr().String()
}

// An https:// interface URL is dialed over TLS, with the roots Options
// give; http:// and a bare loopback target in plaintext, which a TLS
// server refuses.
func TestInterfaceURLSchemes(t *testing.T) {
	ca := certtest.NewCA(t)
	addr := serveTLS(t, ca)
	trusting := grpcclient.Factory(&grpcclient.Options{TLSConfig: ca.ClientConfig()})
	tests := []struct {
		name    string
		url     string
		factory a2aclient.TransportFactory
		wantOK  bool
	}{
		{"https with the CA", "https://" + addr, trusting, true},
		{"https with a trailing slash", "https://" + addr + "/", trusting, true},
		{"https without the CA", "https://" + addr, grpcclient.Factory(nil), false},
		{"http", "http://" + addr, trusting, false},
		{"bare loopback target", addr, trusting, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			card := &a2a.AgentCard{Name: "echo", SupportedInterfaces: []a2a.AgentInterface{
				{URL: tt.url, ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: a2a.ProtocolVersion, Tenant: "echo"}}}
			c, err := a2aclient.New(card, &a2aclient.Options{TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: tt.factory}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			res, err := c.SendText(ctx, "over "+tt.name, "", "")
			if tt.wantOK {
				if err != nil || res.Task == nil || a2a.PartsText(res.Task.Artifacts[0].Parts) != "echo: over "+tt.name {
					t.Fatalf("SendMessage: %+v, %v", res, err)
				}
				return
			}
			if !errors.Is(err, a2aclient.ErrUnreachable) {
				t.Fatalf("SendMessage: %v, want unreachable", err)
			}
		})
	}
}

func TestInterfaceURLRefused(t *testing.T) {
	for _, url := range []string{"https://user:hunter2@127.0.0.1:1", "https://127.0.0.1:1/a2a", "https://", "http://127.0.0.1:1?x=1"} {
		card := &a2a.AgentCard{Name: "x", SupportedInterfaces: []a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: a2a.ProtocolVersion}}}
		c, err := a2aclient.New(card, &a2aclient.Options{TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)}})
		if err == nil {
			_, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "x"})
		}
		if err == nil || !strings.Contains(err.Error(), "host[:port]") {
			t.Errorf("%s: %v, want a refused URL", strings.ReplaceAll(url, "hunter2", "xxx"), err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows the URL's password")
		}
	}
}

func tlsPair(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	return &c, err
}
