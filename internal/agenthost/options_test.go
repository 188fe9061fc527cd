package agenthost

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/store"
)

func TestOptionsResolve(t *testing.T) {
	priv, err := jwk.GenerateKey(jwk.EdDSA)
	if err != nil {
		t.Fatal(err)
	}
	an := agent.New("x", "1.0.0", nil)
	tests := []struct {
		name         string
		opts         *Options
		wantBindings []string
		wantErr      string
	}{
		{"nil", nil, []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON}, ""},
		{"gRPC joins the defaults", &Options{GRPCAddr: "127.0.0.1:0"}, []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON, a2a.BindingGRPC}, ""},
		{"operator's order", &Options{Bindings: []string{a2a.BindingHTTPJSON}}, []string{a2a.BindingHTTPJSON}, ""},
		{"gRPC binding without an address", &Options{Bindings: []string{a2a.BindingGRPC}}, nil, "needs a gRPC listen address"},
		{"unknown binding", &Options{Bindings: []string{"SOAP"}}, nil, `binding "SOAP"`},
		{"public card key", &Options{CardKey: priv.Public()}, nil, "want a private key"},
		{"private card key", &Options{CardKey: priv}, []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON}, ""},
		{"64-byte name", &Options{Hosted: map[string]Agent{strings.Repeat("a", 64): an}}, []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON}, ""},
		{"65-byte name", &Options{Hosted: map[string]Agent{strings.Repeat("a", 65): an}}, nil, "agent name"},
		{"name with a slash", &Options{Hosted: map[string]Agent{"a/b": an}}, nil, "agent name"},
		{"empty name", &Options{Hosted: map[string]Agent{"": an}}, nil, "agent name"},
		{"a built-in's name", &Options{Hosted: map[string]Agent{"echo": an}}, nil, "agent name"},
		{"nil agent", &Options{Hosted: map[string]Agent{"x": nil}}, nil, "is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tt.opts.resolve()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || tt.opts.Check() == nil {
					t.Fatalf("resolve = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || tt.opts.Check() != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantBindings, r.Bindings); diff != "" {
				t.Errorf("bindings (-want +got)\n%s", diff)
			}
			if r.MaxBodyBytes != a2asrv.DefaultMaxBodyBytes {
				t.Errorf("MaxBodyBytes %d, want the default", r.MaxBodyBytes)
			}
		})
	}
	if r, _ := (&Options{MaxBodyBytes: 5}).resolve(); r.MaxBodyBytes != 5 {
		t.Errorf("MaxBodyBytes 5 became %d", r.MaxBodyBytes)
	}
}

// A write through an agent's partition wakes push delivery once it is
// stored, and a refused one does not.
func TestPartitionWakesAfterWrites(t *testing.T) {
	ctx := context.Background()
	woke := 0
	p := agentTasks{store: a2asrv.NewMemoryTaskStore(nil), agent: "echo", wake: func() { woke++ }}
	task := &a2a.Task{ID: a2a.NewID(), ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	v, err := p.Create(ctx, a2asrv.Scope{}, task)
	if err != nil || woke != 1 {
		t.Fatalf("Create: %v, woke %d, want 1", err, woke)
	}
	if _, err := p.Create(ctx, a2asrv.Scope{}, task); err == nil || woke != 1 {
		t.Fatalf("a second Create of one id: %v, woke %d, want an error and no wake", err, woke)
	}
	task.Status.State = a2a.TaskStateCompleted
	if _, err := p.Update(ctx, a2asrv.Scope{}, task, v); err != nil || woke != 2 {
		t.Fatalf("Update: %v, woke %d, want 2", err, woke)
	}
	if _, err := p.Update(ctx, a2asrv.Scope{}, task, v); !errors.Is(err, a2asrv.ErrConcurrentModification) || woke != 2 {
		t.Fatalf("a stale Update: %v, woke %d, want a conflict and no wake", err, woke)
	}
	// The task is the agent's: another agent's partition does not see it.
	other := agentTasks{store: p.store, agent: "tck"}
	if _, _, err := other.Get(ctx, a2asrv.Scope{}, task.ID); !errors.Is(err, a2asrv.ErrNotFound) {
		t.Errorf("another agent's Get = %v, want not found", err)
	}
}

// Cards say pushNotifications exactly when configs are stored and sent,
// and name the gRPC interface, with the agent as its tenant, when gRPC
// is served.
func TestCards(t *testing.T) {
	guard, err := httpapi.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	mem := a2asrv.NewMemoryTaskStore(nil)
	tests := []struct {
		name     string
		stores   *store.Stores
		grpc     bool
		wantPush bool
	}{
		{"tasks only", &store.Stores{Tasks: mem}, false, false},
		{"configs without an outbox", &store.Stores{Tasks: mem, PushConfigs: mem.PushConfigStore()}, false, false},
		{"configs and an outbox", &store.Stores{Tasks: mem, PushConfigs: mem.PushConfigStore(), PushOutbox: mem.PushOutbox()}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Options{}
			if tt.grpc {
				o.GRPCAddr = "127.0.0.1:0"
			}
			h, err := New(t.Context(), tt.stores, Deps{BaseURL: "http://127.0.0.1:1", Guard: guard}, o)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Shutdown(context.Background())
			for _, a := range h.agents {
				if got := a.card.Capabilities.PushNotifications; got == nil || *got != tt.wantPush {
					t.Errorf("%s: pushNotifications %v, want %v", a.name, got, tt.wantPush)
				}
				var grpcIn *a2a.AgentInterface
				for i, in := range a.card.SupportedInterfaces {
					if in.ProtocolBinding == a2a.BindingGRPC {
						grpcIn = &a.card.SupportedInterfaces[i]
					}
				}
				switch {
				case tt.grpc && (grpcIn == nil || grpcIn.Tenant != a.name || grpcIn.URL != h.GRPCAddr()):
					t.Errorf("%s: gRPC interface %+v, want %s with tenant %s", a.name, grpcIn, h.GRPCAddr(), a.name)
				case !tt.grpc && grpcIn != nil:
					t.Errorf("%s: a gRPC interface without gRPC: %+v", a.name, grpcIn)
				}
				if first := a.card.SupportedInterfaces[0]; first.ProtocolBinding != a2a.BindingJSONRPC || first.URL != "http://127.0.0.1:1/agents/"+a.name {
					t.Errorf("%s: first interface %+v", a.name, first)
				}
			}
		})
	}
}

func TestOnLoopback(t *testing.T) {
	for url, want := range map[string]bool{
		"http://127.0.0.1:8080": true, "http://[::1]:8080": true, "http://localhost:8080": true,
		"https://agents.example.com": false, "http://10.0.0.5:8080": false, "%%": false,
	} {
		if got := OnLoopback(url); got != want {
			t.Errorf("OnLoopback(%q) = %v, want %v", url, got, want)
		}
	}
}

// Push secrets are sealed when there are push configs and a key file to
// seal them with: the given one, or the data directory's.
func TestPushSealerChoice(t *testing.T) {
	mem := a2asrv.NewMemoryTaskStore(nil)
	dir := t.TempDir()
	tests := []struct {
		name     string
		stores   *store.Stores
		dataDir  string
		keyFile  string
		wantPath string // "" when nothing is sealed
	}{
		{"no push configs", &store.Stores{Tasks: mem}, dir, "", ""},
		{"stores without a data directory", &store.Stores{Tasks: mem, PushConfigs: mem.PushConfigStore()}, "", "", ""},
		{"the data directory's key", &store.Stores{Tasks: mem, PushConfigs: mem.PushConfigStore()}, dir, "", dir + "/" + PushKeyFile},
		{"a key file given", &store.Stores{Tasks: mem, PushConfigs: mem.PushConfigStore()}, "", dir + "/k", dir + "/k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Host{stores: tt.stores, deps: Deps{DataDir: tt.dataDir}, opts: Options{PushKeyFile: tt.keyFile}, log: slog.New(slog.DiscardHandler)}
			s, err := h.pushSealer()
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if s != nil {
				got = s.path
			}
			if got != tt.wantPath {
				t.Errorf("sealer key %q, want %q", got, tt.wantPath)
			}
		})
	}
}

// The push URL policy allows loopback on a loopback server unless the
// operator's policy says otherwise, and never on a public one.
func TestPushURLPolicy(t *testing.T) {
	strict := &netguard.Policy{}
	tests := []struct {
		name         string
		base         string
		opts         Options
		wantLoopback bool
	}{
		{"default, loopback server", "http://127.0.0.1:8080", Options{}, true},
		{"default, public server", "https://agents.example.com", Options{}, false},
		{"operator's policy", "http://127.0.0.1:8080", Options{PushURLPolicy: strict}, false},
		{"operator's policy, loopback if local", "http://127.0.0.1:8080", Options{PushURLPolicy: strict, PushLoopbackIfLocal: true}, true},
	}
	for _, tt := range tests {
		h := &Host{deps: Deps{BaseURL: tt.base}, opts: tt.opts}
		if got := h.pushURLPolicy().AllowLoopback; got != tt.wantLoopback {
			t.Errorf("%s: AllowLoopback %v, want %v", tt.name, got, tt.wantLoopback)
		}
	}
	if strict.AllowLoopback {
		t.Error("the operator's policy was changed in place")
	}
}
