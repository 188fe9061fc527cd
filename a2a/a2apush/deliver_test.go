package a2apush_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2apush"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/netguard"
)

const issuerURL = "https://agent.test"

var scope = a2asrv.Scope{Tenant: "acme", Owner: "alice"}

// env is an outbox in memory, a deliverer draining it, and the issuer
// whose key signs the notifications.
type env struct {
	t      *testing.T
	tasks  *a2asrv.MemoryTaskStore
	push   *a2asrv.MemoryPushConfigStore
	issuer *auth.Issuer
	d      *a2apush.Deliverer

	mu       sync.Mutex
	versions map[string]a2asrv.Version
}

func newEnv(t *testing.T, o a2apush.Options) *env {
	t.Helper()
	iss, err := auth.Open("", auth.Options{Issuer: issuerURL})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, tasks: a2asrv.NewMemoryTaskStore(nil), issuer: iss, versions: map[string]a2asrv.Version{}}
	e.push = e.tasks.PushConfigStore()
	if o.Policy == nil {
		o.Policy = &netguard.Policy{AllowLoopback: true}
	}
	o.Signer, o.Issuer = iss, issuerURL
	if o.BackoffBase == 0 {
		o.BackoffBase, o.BackoffMax = 5*time.Millisecond, 20*time.Millisecond
	}
	if o.PollInterval == 0 {
		o.PollInterval = 10 * time.Millisecond
	}
	if e.d, err = a2apush.New(e.tasks.PushOutbox(), &o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.d.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// start creates a task and a config for it at url.
func (e *env) start(id, url string, auth *a2a.AuthenticationInfo) {
	e.t.Helper()
	ctx := context.Background()
	v, err := e.tasks.Create(ctx, scope, &a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: time.Now()}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	e.versions[id] = v
	e.mu.Unlock()
	e.put(id, url, auth)
}

func (e *env) put(id, url string, auth *a2a.AuthenticationInfo) {
	e.t.Helper()
	cfg := &a2a.TaskPushNotificationConfig{ID: "hook", TaskID: id, URL: url, Token: "tok-" + id, Authentication: auth}
	if err := e.push.Put(context.Background(), scope, cfg); err != nil {
		e.t.Fatal(err)
	}
	e.d.Wake()
}

// chunk appends an artifact chunk whose text is text.
func (e *env) chunk(id, text string) {
	e.t.Helper()
	ev := &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{
		TaskID: id, ContextID: "c", Append: true,
		Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart(text)}},
	}}
	e.mu.Lock()
	prev := e.versions[id]
	e.mu.Unlock()
	v, err := e.tasks.Append(context.Background(), scope, id, prev, []*a2a.StreamResponse{ev}, nil)
	if err != nil {
		e.t.Error(err)
		return
	}
	e.mu.Lock()
	e.versions[id] = v
	e.mu.Unlock()
	e.d.Wake()
}

func (e *env) state(id string) *a2asrv.PushDeliveryState {
	e.t.Helper()
	st, err := e.push.PushDeliveryState(context.Background(), scope, id, "hook")
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// until waits for task id's delivery state to satisfy ok, and returns it.
func (e *env) until(id string, ok func(*a2asrv.PushDeliveryState) bool) *a2asrv.PushDeliveryState {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := e.state(id)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("delivery state of %s: %+v", id, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func dead(st *a2asrv.PushDeliveryState) bool { return st.State == a2asrv.PushStateDead }
func delivered(st *a2asrv.PushDeliveryState) bool {
	return st.Pending == 0 && !st.LastDelivered.IsZero()
}

// request is one request a receiver got, as it came.
type request struct {
	header http.Header
	body   []byte
}

// receiver is a webhook in this process. respond decides each answer:
// n counts the requests, from 1.
type receiver struct {
	t        *testing.T
	srv      *httptest.Server
	verifier *a2aclient.PushVerifier
	respond  func(n int, w http.ResponseWriter) bool // true: answered, skip the verification

	mu   sync.Mutex
	n    int
	raw  []request
	got  []*a2aclient.PushNotification
	errs []error
	more chan struct{}
}

func newReceiver(t *testing.T, e *env, respond func(n int, w http.ResponseWriter) bool) *receiver {
	t.Helper()
	v, err := a2aclient.NewPushVerifier(issuerURL, e.issuer, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, verifier: v, respond: respond, more: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.n++
	n := r.n
	r.raw = append(r.raw, request{req.Header.Clone(), body})
	r.mu.Unlock()
	if r.respond != nil && r.respond(n, w) {
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	note, err := r.verifier.Verify(req)
	r.mu.Lock()
	if err != nil {
		r.errs = append(r.errs, err)
	} else {
		r.got = append(r.got, note)
	}
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
	if err != nil {
		http.Error(w, "unverified", http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// wait waits until the receiver has verified n notifications.
func (r *receiver) wait(n int) []*a2aclient.PushNotification {
	r.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		got, errs := slices.Clone(r.got), slices.Clone(r.errs)
		r.mu.Unlock()
		if len(errs) > 0 {
			r.t.Fatalf("the receiver refused notifications: %v", errs)
		}
		if len(got) >= n {
			return got
		}
		select {
		case <-r.more:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			r.t.Fatalf("the receiver verified %d notifications, want %d", len(got), n)
		}
	}
}

func (r *receiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// texts are the artifact texts of the notifications about task id, in
// arrival order; a task notification counts as "task".
func texts(notes []*a2aclient.PushNotification, id string) []string {
	var out []string
	for _, n := range notes {
		if n.Claims.TaskID != id {
			continue
		}
		switch ev := n.Event; {
		case ev.Task != nil:
			out = append(out, "task")
		case ev.ArtifactUpdate != nil:
			out = append(out, ev.ArtifactUpdate.Artifact.Parts[0].Text)
		}
	}
	return out
}

func TestDeliveryKeepsPerTaskOrder(t *testing.T) {
	e := newEnv(t, a2apush.Options{Concurrency: 4})
	r := newReceiver(t, e, nil)
	const tasks, chunks = 6, 40
	for i := range tasks {
		e.start(fmt.Sprintf("t%d", i), r.srv.URL, nil)
	}
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Go(func() {
			for j := range chunks {
				e.chunk(fmt.Sprintf("t%d", i), fmt.Sprint(j))
			}
		})
	}
	wg.Wait()
	got := r.wait(tasks * (chunks + 1))
	for i := range tasks {
		want := []string{"task"}
		for j := range chunks {
			want = append(want, fmt.Sprint(j))
		}
		if g := texts(got, fmt.Sprintf("t%d", i)); !slices.Equal(g, want) {
			t.Errorf("task t%d: notifications in the order %v, want %v", i, g, want)
		}
	}
	if n := r.requests(); n != tasks*(chunks+1) {
		t.Errorf("%d requests for %d notifications", n, tasks*(chunks+1))
	}
}

func TestRetriesAfter5xxAndTimeout(t *testing.T) {
	e := newEnv(t, a2apush.Options{Timeout: 150 * time.Millisecond})
	release := make(chan struct{})
	defer close(release)
	r := newReceiver(t, e, func(n int, w http.ResponseWriter) bool {
		switch n {
		case 1:
			http.Error(w, "boom", http.StatusInternalServerError)
		case 2:
			w.Header().Set("Retry-After", "1") // honoured up to BackoffMax
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case 3:
			select { // past the deliverer's timeout
			case <-release:
			case <-time.After(time.Second):
			}
		default:
			return false
		}
		return true
	})
	e.start("t1", r.srv.URL, nil)
	got := r.wait(1)
	if n := r.requests(); n != 4 {
		t.Errorf("delivered at request %d, want 4 (500, 503, timeout, 2xx)", n)
	}
	st := e.until("t1", delivered)
	if st.State != a2asrv.PushStateActive || st.Attempts != 0 || st.LastError != "" {
		t.Errorf("after the delivery: %+v", st)
	}
	// Every attempt carried the same notification id and a jti of its own.
	r.mu.Lock()
	raw := slices.Clone(r.raw)
	r.mu.Unlock()
	jtis := map[string]bool{}
	for _, q := range raw {
		jtis[q.header.Get(a2a.HeaderPushSignature)] = true
	}
	if len(jtis) != len(raw) {
		t.Errorf("%d attempts sent %d distinct tokens", len(raw), len(jtis))
	}
	if got[0].Claims.NotificationID == "" {
		t.Error("no notification id")
	}
	e.chunk("t1", "after")
	if g := texts(r.wait(2), "t1"); !slices.Equal(g, []string{"task", "after"}) {
		t.Errorf("then: %v", g)
	}
}

func TestDeadLetter(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("a redirect was followed")
	}))
	defer other.Close()
	for _, tc := range []struct {
		name     string
		status   int
		attempts int // requests before the stream is dead
		errHas   string
	}{
		{"404 refuses at once", http.StatusNotFound, 1, "HTTP 404 (not retried)"},
		{"401 refuses at once", http.StatusUnauthorized, 1, "HTTP 401 (not retried)"},
		{"a redirect is not followed", http.StatusFound, 1, "HTTP 302 (not retried)"},
		{"500 until MaxAttempts", http.StatusInternalServerError, 3, "gave up after 3 attempts: HTTP 500"},
		{"429 until MaxAttempts", http.StatusTooManyRequests, 3, "gave up after 3 attempts: HTTP 429"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, a2apush.Options{MaxAttempts: 3})
			var healthy bool
			var mu sync.Mutex
			r := newReceiver(t, e, func(n int, w http.ResponseWriter) bool {
				mu.Lock()
				defer mu.Unlock()
				if healthy {
					return false
				}
				w.Header().Set("Location", other.URL)
				w.WriteHeader(tc.status)
				return true
			})
			e.start("t1", r.srv.URL, nil)
			st := e.until("t1", dead)
			if st.Attempts != tc.attempts || st.LastError != tc.errHas || st.Pending != 0 || st.LastAttempt.IsZero() {
				t.Errorf("dead state: %+v; want %d attempts, error %q", st, tc.attempts, tc.errHas)
			}
			if n := r.requests(); n != tc.attempts {
				t.Errorf("%d requests, want %d", n, tc.attempts)
			}
			// GetTaskPushNotificationConfig shows the dead letter.
			h := a2asrv.NewHandler(&a2a.AgentCard{Name: "t"}, a2asrv.ExecutorFunc(nil), &a2asrv.Options{TaskStore: e.tasks, PushConfigStore: e.push,
				Identify: func(context.Context, *a2asrv.Call) (a2asrv.Scope, error) { return scope, nil }})
			hd := http.Header{}
			hd.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
			cfg, err := h.Core().GetTaskPushNotificationConfig(context.Background(), &a2asrv.Call{Header: hd},
				&a2a.GetTaskPushNotificationConfigRequest{TaskID: "t1", ID: "hook"})
			if err != nil {
				t.Fatalf("GetTaskPushNotificationConfig: %v", err)
			}
			if d := cfg.Delivery; d == nil || d.State != a2a.PushStateDead || d.LastError != tc.errHas {
				t.Errorf("GetTaskPushNotificationConfig's delivery %+v, want the dead letter", d)
			}
			// A dead stream gets nothing more...
			e.chunk("t1", "lost")
			time.Sleep(50 * time.Millisecond)
			if n := r.requests(); n != tc.attempts {
				t.Errorf("a dead stream was sent to: %d requests", n)
			}
			// ...until its config is put again: then it starts from the
			// task as it stands.
			mu.Lock()
			healthy = true
			mu.Unlock()
			e.put("t1", r.srv.URL, nil)
			got := r.wait(1)
			if g := texts(got, "t1"); !slices.Equal(g, []string{"task"}) {
				t.Errorf("after the config was put again: %v", g)
			}
			e.until("t1", delivered)
		})
	}
}

func TestJWTVerification(t *testing.T) {
	e := newEnv(t, a2apush.Options{})
	r := newReceiver(t, e, nil)
	e.start("t1", r.srv.URL, nil)
	e.start("t2", r.srv.URL, &a2a.AuthenticationInfo{Scheme: "Basic", Credentials: "dXNlcjpwYXNz"})
	r.wait(2)
	r.mu.Lock()
	raw := slices.Clone(r.raw)
	r.mu.Unlock()
	byTask := map[string]request{}
	for _, q := range raw {
		if strings.Contains(string(q.body), `"id":"t1"`) {
			byTask["t1"] = q
		} else {
			byTask["t2"] = q
		}
	}
	t.Run("headers", func(t *testing.T) {
		h1, h2 := byTask["t1"].header, byTask["t2"].header
		if sig := h1.Get(a2a.HeaderPushSignature); sig == "" || h1.Get("Authorization") != "Bearer "+sig {
			t.Errorf("without authentication, Authorization should carry the JWT: %q", h1.Get("Authorization"))
		}
		if h2.Get("Authorization") != "Basic dXNlcjpwYXNz" || h2.Get(a2a.HeaderPushSignature) == "" {
			t.Errorf("with authentication: Authorization %q, signature set %t", h2.Get("Authorization"), h2.Get(a2a.HeaderPushSignature) != "")
		}
		for _, h := range []string{a2a.HeaderPushToken, a2a.HeaderPushTokenAlt} {
			if h1.Get(h) != "tok-t1" {
				t.Errorf("%s: %q", h, h1.Get(h))
			}
		}
		if ct := h1.Get("Content-Type"); ct != "application/a2a+json" {
			t.Errorf("Content-Type %q", ct)
		}
	})
	verify := func(q request, v *a2aclient.PushVerifier) error {
		req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(q.body))
		req.Header = q.header.Clone()
		_, err := v.Verify(req)
		return err
	}
	fresh := func(t *testing.T, o *a2aclient.PushVerifierOptions) *a2aclient.PushVerifier {
		v, err := a2aclient.NewPushVerifier(issuerURL, e.issuer, o)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	other, err := auth.Open("", auth.Options{Issuer: issuerURL})
	if err != nil {
		t.Fatal(err)
	}
	q := byTask["t1"]
	tampered := request{q.header, bytes.Replace(q.body, []byte("TASK_STATE_SUBMITTED"), []byte("TASK_STATE_COMPLETED"), 1)}
	for _, tc := range []struct {
		name    string
		v       *a2aclient.PushVerifier
		req     request
		wantErr error // nil: verifies
	}{
		{"as sent", fresh(t, nil), q, nil},
		{"replayed", r.verifier, q, a2aclient.ErrPushReplay},
		{"tampered body", fresh(t, nil), tampered, a2aclient.ErrPushRejected},
		{"the body of another task", fresh(t, nil), request{q.header, byTask["t2"].body}, a2aclient.ErrPushRejected},
		{"another issuer's keys", func() *a2aclient.PushVerifier {
			v, _ := a2aclient.NewPushVerifier(issuerURL, other, nil)
			return v
		}(), q, a2aclient.ErrPushRejected},
		{"another issuer named", func() *a2aclient.PushVerifier {
			v, _ := a2aclient.NewPushVerifier("https://elsewhere.test", e.issuer, nil)
			return v
		}(), q, a2aclient.ErrPushRejected},
		{"another webhook", fresh(t, &a2aclient.PushVerifierOptions{Audience: "https://elsewhere.test/hook"}), q, a2aclient.ErrPushRejected},
		{"its own webhook", fresh(t, &a2aclient.PushVerifierOptions{Audience: r.srv.URL}), q, nil},
		{"expired", fresh(t, &a2aclient.PushVerifierOptions{Now: func() time.Time { return time.Now().Add(time.Hour) }}), q, a2aclient.ErrPushRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verify(tc.req, tc.v)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("Verify: %v, want %v", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), tc.req.header.Get(a2a.HeaderPushSignature)) {
				t.Error("the error repeats the token")
			}
		})
	}
}

// resolver answers from a table, as DNS would.
type resolver map[string][]netip.Addr

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

func TestSSRFRefusedAtDelivery(t *testing.T) {
	loop := netip.MustParseAddr("127.0.0.1")
	res := resolver{
		"hooks.example.com": {loop},
		"mixed.example.com": {netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("::ffff:127.0.0.1")},
	}
	for _, tc := range []struct {
		name   string
		policy *netguard.Policy
		host   string // the receiver's host, :port added
		errHas string // "" delivers
	}{
		{"a name that resolves to loopback", &netguard.Policy{}, "hooks.example.com", "hooks.example.com resolves to netguard: 127.0.0.1 is a loopback destination"},
		{"every address refused", &netguard.Policy{}, "mixed.example.com", "mixed.example.com resolves to netguard: 10.1.2.3 is a private destination"},
		{"a loopback literal", &netguard.Policy{}, "127.0.0.1", "127.0.0.1 is a loopback destination"},
		{"localhost", &netguard.Policy{}, "localhost", "localhost is a loopback destination"},
		{"metadata, whatever the policy", &netguard.Policy{AllowLoopback: true, AllowPrivate: true}, "169.254.169.254", "169.254.169.254 is a metadata destination"},
		{"the same name, loopback allowed", &netguard.Policy{AllowLoopback: true}, "hooks.example.com", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, a2apush.Options{Policy: tc.policy, Resolver: res})
			r := newReceiver(t, e, nil)
			_, port, _ := strings.Cut(strings.TrimPrefix(r.srv.URL, "http://"), ":")
			e.start("t1", "http://"+tc.host+":"+port+"/hook?key=SECRET", nil)
			if tc.errHas == "" {
				r.wait(1)
				return
			}
			st := e.until("t1", dead)
			if !strings.Contains(st.LastError, tc.errHas) || st.Attempts != 1 {
				t.Errorf("refusal: %+v; want an error with %q", st, tc.errHas)
			}
			if strings.Contains(st.LastError, "SECRET") {
				t.Errorf("the error shows the URL: %q", st.LastError)
			}
			if n := r.requests(); n != 0 {
				t.Errorf("the receiver was reached %d times", n)
			}
		})
	}
}

func TestResponseBodyIsCapped(t *testing.T) {
	e := newEnv(t, a2apush.Options{MaxResponseBytes: 1024})
	wrote := make(chan error, 1)
	r := newReceiver(t, e, func(n int, w http.ResponseWriter) bool {
		if n > 1 {
			return false
		}
		w.WriteHeader(http.StatusOK)
		_, err := w.Write(bytes.Repeat([]byte("x"), 64<<20))
		wrote <- err
		return true
	})
	e.start("t1", r.srv.URL, nil)
	select {
	case err := <-wrote:
		if err == nil {
			t.Error("the deliverer read a 64 MiB response whole")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the response was never cut off")
	}
	// A 2xx with a large body is a delivery.
	e.until("t1", delivered)
}

func TestOpenFailureIsRetried(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	e := newEnv(t, a2apush.Options{Open: func(_ context.Context, _ a2asrv.Scope, cfg *a2a.TaskPushNotificationConfig) (*a2a.TaskPushNotificationConfig, error) {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls == 1 {
			return nil, errors.New("sealed with key 1234, this server has 5678")
		}
		c := *cfg
		c.Token = "opened"
		return &c, nil
	}})
	r := newReceiver(t, e, nil)
	e.start("t1", r.srv.URL, nil)
	r.wait(1)
	if st := e.until("t1", delivered); st.State != a2asrv.PushStateActive {
		t.Errorf("after a credentials failure: %+v", st)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.raw) != 1 || r.raw[0].header.Get(a2a.HeaderPushToken) != "opened" {
		t.Errorf("%d requests; token %q", len(r.raw), r.raw[0].header.Get(a2a.HeaderPushToken))
	}
}
