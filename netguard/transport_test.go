package netguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestHostAllowed(t *testing.T) {
	tests := []struct {
		host     string
		suffixes []string
		want     bool
	}{
		{"agents.partner.example", []string{".partner.example"}, true},
		{"partner.example", []string{".partner.example"}, false},
		{"partner.example", []string{"partner.example"}, true},
		{"a.partner.example", []string{"Partner.Example."}, true},
		{"evilpartner.example", []string{"partner.example"}, false},
		{"partner.example", []string{"", " ", "."}, false},
		{"partner.example", nil, false},
		{"127.0.0.1", []string{"127.0.0.1"}, true},
	}
	for _, tt := range tests {
		if got := HostAllowed(tt.host, tt.suffixes); got != tt.want {
			t.Errorf("HostAllowed(%q, %q) = %v, want %v", tt.host, tt.suffixes, got, tt.want)
		}
	}
}

// GuardClient refuses a redirect to a destination the policy does not
// allow before following it, and the dial-time check refuses what the URL
// check let through; both errors carry WrapRefusal's restatement.
func TestGuardClient(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest", http.StatusFound)
	}))
	defer redirect.Close()
	mine := errors.New("mine")
	opts := &TransportOptions{WrapRefusal: func(err error) error { return errors.Join(mine, err) }}

	tests := []struct {
		name     string
		policy   *Policy
		url      string
		wantErr  bool
		wantHits int32
	}{
		{name: "loopback allowed", policy: &Policy{AllowLoopback: true}, url: target.URL, wantHits: 1},
		{name: "loopback refused at dial", policy: &Policy{}, url: target.URL, wantErr: true},
		{name: "redirect to metadata refused", policy: &Policy{AllowLoopback: true}, url: redirect.URL, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			hc := tt.policy.GuardClient(nil, opts)
			defer hc.CloseIdleConnections()
			resp, err := hc.Get(tt.url)
			if err == nil {
				resp.Body.Close()
			}
			if tt.wantErr != (err != nil) {
				t.Fatalf("GET = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && (!errors.Is(err, ErrRefused) || !errors.Is(err, mine)) {
				t.Errorf("GET = %v, want ErrRefused restated by WrapRefusal", err)
			}
			if got := hits.Load(); got != tt.wantHits {
				t.Errorf("the target saw %d requests, want %d", got, tt.wantHits)
			}
		})
	}
}
