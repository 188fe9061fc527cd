package sqlstore

import (
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/gate"
)

func TestPrepareActionWrite(t *testing.T) {
	now := time.Date(2026, 5, 1, 9, 0, 0, 123456789, time.FixedZone("x", 3600))
	stored := now.UTC().Truncate(time.Microsecond)
	entryAt := now.Add(-time.Hour)
	tests := []struct {
		name string
		in   gate.ActionWrite
		want gate.ActionWrite
	}{
		{
			name: "create fills the ledger and audit from the record",
			in: gate.ActionWrite{Record: gate.ActionRecord{TenantID: "acme", SessionID: "s", ActionID: "a", DecidedAt: now, Version: 7},
				Now: now, Audit: &gate.AuditEntry{Kind: "k"}, Ledger: []gate.LedgerEntry{{Subject: "c"}}},
			want: gate.ActionWrite{Record: gate.ActionRecord{TenantID: "acme", SessionID: "s", ActionID: "a", DecidedAt: stored, Version: 1,
				CreatedAt: stored, UpdatedAt: stored},
				Now: stored, Audit: &gate.AuditEntry{Kind: "k", At: stored},
				Ledger: []gate.LedgerEntry{{TenantID: "acme", SessionID: "s", ActionID: "a", Subject: "c", At: stored}}},
		},
		{
			name: "update keeps what entries set",
			in: gate.ActionWrite{Record: gate.ActionRecord{TenantID: "acme", SessionID: "s", ActionID: "a", CreatedAt: entryAt}, ExpectVersion: 3,
				Now: now, Audit: &gate.AuditEntry{At: entryAt},
				Ledger: []gate.LedgerEntry{{TenantID: "other", SessionID: "s2", At: entryAt}}},
			want: gate.ActionWrite{Record: gate.ActionRecord{TenantID: "acme", SessionID: "s", ActionID: "a", CreatedAt: entryAt, Version: 4,
				UpdatedAt: stored}, ExpectVersion: 3,
				Now: stored, Audit: &gate.AuditEntry{At: entryAt},
				Ledger: []gate.LedgerEntry{{TenantID: "other", SessionID: "s2", At: entryAt}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.in
			PrepareActionWrite(&w)
			if d := gocmp.Diff(tt.want, w); d != "" {
				t.Errorf("PrepareActionWrite (-want +got):\n%s", d)
			}
			// The caller's entries are not changed.
			if tt.in.Audit.At != entryAt && !tt.in.Audit.At.IsZero() {
				t.Errorf("the caller's audit entry was changed: %+v", tt.in.Audit)
			}
			if tt.in.Ledger[0].TenantID == "acme" {
				t.Errorf("the caller's ledger was changed: %+v", tt.in.Ledger)
			}
		})
	}
}

func TestChain(t *testing.T) {
	e := gate.AuditEntry{Kind: "k", At: time.Date(2026, 5, 1, 9, 0, 0, 999, time.FixedZone("x", 3600)), Seq: 40, Hash: "forged"}
	Chain(&e, 4, "prev")
	if e.Seq != 5 || e.PrevHash != "prev" || e.At.Location() != time.UTC || e.At.Nanosecond() != 0 || e.Hash != gate.ChainHash("prev", e) {
		t.Errorf("Chain = %+v", e)
	}
	v := gate.NewAuditVerifier()
	first := gate.AuditEntry{Kind: "first", At: e.At}
	Chain(&first, 0, gate.AuditGenesis)
	if err := v.Add(first); err != nil {
		t.Errorf("the first entry does not verify: %v", err)
	}
}
