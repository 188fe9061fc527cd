package execgw

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
)

func TestPrincipalOf(t *testing.T) {
	user := &identity.Claims{TenantID: "acme", UserID: "alice", Subject: "s-alice", Scopes: []string{"runs:*"}}
	service := &identity.Claims{TenantID: "acme", AgentID: "billing", Scopes: []string{"runs:service"}}
	serviceWithUser := &identity.Claims{TenantID: "acme", UserID: "bob", Scopes: []string{"runs:service"}}
	noService := &identity.Claims{TenantID: "acme", AgentID: "bot", Scopes: []string{"runs:read"}}
	admin := &httpapi.Caller{Admin: true}
	tok := func(c *identity.Claims) *httpapi.Caller { return &httpapi.Caller{Claims: c} }
	cases := []struct {
		name       string
		caller     *httpapi.Caller
		header     string
		needTenant bool
		status     int // 0: accepted
		want       principal
	}{
		{name: "no caller", status: 401},
		{name: "admin names its tenant", caller: admin, header: "globex", needTenant: true,
			want: principal{tenant: "globex", admin: true, service: true, subject: adminSubject}},
		{name: "admin without a tenant reads every tenant", caller: admin, want: principal{admin: true, service: true, subject: adminSubject}},
		{name: "admin must name a tenant to write", caller: admin, needTenant: true, status: 400},
		{name: "tenant header too long", caller: admin, header: strings.Repeat("t", httpapi.MaxTenantHeaderBytes+1), status: 400},
		{name: "tenant header at the limit", caller: admin, header: strings.Repeat("t", httpapi.MaxTenantHeaderBytes),
			want: principal{tenant: strings.Repeat("t", httpapi.MaxTenantHeaderBytes), admin: true, service: true, subject: adminSubject}},
		{name: "a user", caller: tok(user), want: principal{tenant: "acme", userID: "alice", subject: "s-alice", claims: user}},
		{name: "a user naming its own tenant", caller: tok(user), header: "acme", want: principal{tenant: "acme", userID: "alice", subject: "s-alice", claims: user}},
		{name: "a user naming another tenant", caller: tok(user), header: "globex", status: 403},
		{name: "a service account", caller: tok(service), want: principal{tenant: "acme", service: true, subject: "billing", claims: service}},
		{name: "runs:service with a user is a user", caller: tok(serviceWithUser), want: principal{tenant: "acme", userID: "bob", claims: serviceWithUser}},
		{name: "no user and no service scope", caller: tok(noService), want: principal{tenant: "acme", subject: "bot", claims: noService}},
		{name: "a token without a tenant", caller: tok(&identity.Claims{UserID: "x"}), status: 403},
		{name: "claims of another kind", caller: &httpapi.Caller{Claims: "not claims"}, status: 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if c.header != "" {
				r.Header.Set(HeaderTenant, c.header)
			}
			if c.caller != nil {
				r = r.WithContext(httpapi.WithCaller(r.Context(), c.caller))
			}
			p, err := principalOf(r, c.needTenant)
			if c.status != 0 {
				if got := statusOf(err); got != c.status {
					t.Fatalf("status %d (%v), want %d", got, err, c.status)
				}
				return
			}
			if err != nil || p != c.want {
				t.Fatalf("principal %+v, %v; want %+v", p, err, c.want)
			}
		})
	}
}

// statusOf is the status the API answers err with.
func statusOf(err error) int {
	w := httptest.NewRecorder()
	(&httpapi.API{ProblemFor: problemFor}).Fail(w, httptest.NewRequest("GET", "/", nil), err)
	return w.Code
}

func TestPrincipalRules(t *testing.T) {
	alice := principal{tenant: "acme", userID: "alice", claims: &identity.Claims{Scopes: []string{"runs:read"}}}
	svc := principal{tenant: "acme", service: true, claims: &identity.Claims{}}
	op := principal{admin: true, service: true}
	run := &gateway.Run{TenantID: "acme", Caller: gateway.Caller{UserID: "alice"}}
	bobs := &gateway.Run{TenantID: "acme", Caller: gateway.Caller{UserID: "bob"}}
	other := &gateway.Run{TenantID: "globex", Caller: gateway.Caller{UserID: "alice"}}
	for _, c := range []struct {
		p    principal
		r    *gateway.Run
		want bool
	}{{alice, run, true}, {alice, bobs, false}, {alice, other, false}, {svc, bobs, true}, {svc, other, false},
		{op, other, true}, {principal{tenant: "acme", claims: &identity.Claims{}}, run, false}} {
		if got := c.p.owns(c.r); got != c.want {
			t.Errorf("%+v owns %+v = %v", c.p, c.r, got)
		}
	}
	if err := alice.need(ScopeRead); err != nil {
		t.Error(err)
	}
	if err := alice.need(ScopeExecute); err == nil || statusOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), ScopeExecute) {
		t.Errorf("need %s: %v", ScopeExecute, err)
	}
	if err := op.need(ScopeInstancesWrite); err != nil {
		t.Errorf("the operator lacks a scope: %v", err)
	}
	if c := svc.caller(); !c.Service {
		t.Errorf("a service account's runs are recorded as %+v", c)
	}
	if c := op.caller(); c.Service {
		t.Errorf("the operator's runs are recorded as a service account's: %+v", c)
	}
}

func TestQuote(t *testing.T) {
	if got := quote(strings.Repeat("x", 80)); got != `"`+strings.Repeat("x", 80)+`"` {
		t.Errorf("80 bytes: %s", got)
	}
	if got := quote(strings.Repeat("x", 81)); got != `"`+strings.Repeat("x", 80)+`…"` {
		t.Errorf("81 bytes: %s", got)
	}
}
