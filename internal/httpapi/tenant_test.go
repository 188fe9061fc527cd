package httpapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
)

func TestTenantCallerOf(t *testing.T) {
	alice := &identity.Claims{TenantID: "acme", UserID: "alice", Subject: "s-alice", Scopes: []string{"schedules:read"}}
	bot := &identity.Claims{TenantID: "acme", AgentID: "bot"}
	admin := &httpapi.Caller{Admin: true}
	tok := func(c *identity.Claims) *httpapi.Caller { return &httpapi.Caller{Claims: c} }
	long := strings.Repeat("t", httpapi.MaxTenantHeaderBytes)
	tests := []struct {
		name       string
		caller     *httpapi.Caller
		header     string
		needTenant bool
		status     int // 0: accepted
		want       httpapi.TenantCaller
	}{
		{name: "no caller", status: 401},
		{name: "the operator names the tenant", caller: admin, header: "globex", needTenant: true,
			want: httpapi.TenantCaller{Tenant: "globex", Admin: true, Subject: "admin"}},
		{name: "the operator without a tenant, where none is needed", caller: admin, want: httpapi.TenantCaller{Admin: true, Subject: "admin"}},
		{name: "the operator without a tenant", caller: admin, needTenant: true, status: 400},
		{name: "a header at the limit", caller: admin, header: long, want: httpapi.TenantCaller{Tenant: long, Admin: true, Subject: "admin"}},
		{name: "a header past the limit", caller: admin, header: long + "t", status: 400},
		{name: "a token", caller: tok(alice), needTenant: true, want: httpapi.TenantCaller{Tenant: "acme", Subject: "s-alice", Claims: alice}},
		{name: "a token naming its tenant", caller: tok(alice), header: "acme", want: httpapi.TenantCaller{Tenant: "acme", Subject: "s-alice", Claims: alice}},
		{name: "a token naming another tenant", caller: tok(alice), header: "globex", status: 403},
		{name: "a token without a subject is its agent", caller: tok(bot), want: httpapi.TenantCaller{Tenant: "acme", Subject: "bot", Claims: bot}},
		{name: "a token without a tenant", caller: tok(&identity.Claims{UserID: "x"}), status: 403},
		{name: "claims of another kind", caller: &httpapi.Caller{Claims: "not claims"}, status: 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tc.header != "" {
				r.Header.Set(httpapi.TenantHeader, tc.header)
			}
			if tc.caller != nil {
				r = r.WithContext(httpapi.WithCaller(r.Context(), tc.caller))
			}
			got, err := httpapi.TenantCallerOf(r, tc.needTenant)
			if tc.status != 0 {
				w := httptest.NewRecorder()
				(&httpapi.API{}).Fail(w, r, err)
				if w.Code != tc.status {
					t.Fatalf("status %d (%v), want %d", w.Code, err, tc.status)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("TenantCallerOf = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	c := httpapi.TenantCaller{Tenant: "acme", Claims: alice}
	if c.Need("schedules:read") != nil || c.Need("schedules:write") == nil {
		t.Error("Need does not follow the token's scopes")
	}
	if (httpapi.TenantCaller{Admin: true}).Need("anything") != nil {
		t.Error("the operator lacks a scope")
	}
}
