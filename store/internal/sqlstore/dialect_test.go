package sqlstore

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/heartbeat"
)

var errNoRows = errors.New("no rows")

func TestDialectHolds(t *testing.T) {
	strict := Dialect{Name: "strict", NoRows: errNoRows, StrictText: true}
	loose := Dialect{Name: "loose", NoRows: errNoRows}
	tests := []struct {
		name              string
		s                 []string
		strictOK, looseOK bool
	}{
		{"none", nil, true, true},
		{"plain text", []string{"acme", "", "héllo"}, true, true},
		{"NUL", []string{"acme", "a\x00b"}, false, true},
		{"invalid UTF-8", []string{"\xff"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := strict.Holds(tc.s...); got != tc.strictOK {
				t.Errorf("strict Holds(%q) = %v, want %v", tc.s, got, tc.strictOK)
			}
			if got := loose.Holds(tc.s...); got != tc.looseOK {
				t.Errorf("loose Holds(%q) = %v, want %v", tc.s, got, tc.looseOK)
			}
		})
	}
}

func TestDialectErrors(t *testing.T) {
	d := Dialect{Name: "db", NoRows: errNoRows}
	other := errors.New("broken pipe")
	tests := []struct {
		name     string
		err      error
		wantIs   error
		wantText string
	}{
		{"none", nil, nil, ""},
		{"no rows", errNoRows, heartbeat.ErrNotFound, "db: get config \"c1\": " + heartbeat.ErrNotFound.Error()},
		{"no rows, wrapped", errors.Join(errNoRows), heartbeat.ErrNotFound, "db: get config \"c1\": " + heartbeat.ErrNotFound.Error()},
		{"another error", other, other, "db: get config \"c1\": broken pipe"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Missing(tc.err, heartbeat.ErrNotFound)
			d.wrap(&err, "get config %q", "c1")
			if !errors.Is(err, tc.wantIs) || (tc.wantIs == nil) != (err == nil) {
				t.Fatalf("error %v, want one matching %v", err, tc.wantIs)
			}
			if err != nil && err.Error() != tc.wantText {
				t.Errorf("error %q, want %q", err, tc.wantText)
			}
		})
	}
}

// pairs is a result set of (key, count) rows.
type pairs struct {
	keys    []string
	counts  []int64
	i       int
	scanErr error
}

func (p *pairs) Next() bool { p.i++; return p.i <= len(p.keys) }
func (p *pairs) Err() error { return nil }
func (p *pairs) Scan(dest ...any) error {
	if p.scanErr != nil {
		return p.scanErr
	}
	*dest[0].(*string), *dest[1].(*int64) = p.keys[p.i-1], p.counts[p.i-1]
	return nil
}

func TestCountBy(t *testing.T) {
	errScan := errors.New("scan")
	tests := []struct {
		name    string
		rows    *pairs
		want    map[heartbeat.Status]int64
		wantErr error
	}{
		{"none", &pairs{}, map[heartbeat.Status]int64{}, nil},
		{"by status", &pairs{keys: []string{"active", "paused"}, counts: []int64{3, 1}},
			map[heartbeat.Status]int64{heartbeat.StatusActive: 3, heartbeat.StatusPaused: 1}, nil},
		{"a scan that fails", &pairs{keys: []string{"active"}, counts: []int64{1}, scanErr: errScan}, nil, errScan},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CountBy[heartbeat.Status](tc.rows)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("CountBy error %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CountBy (-want +got):\n%s", diff)
			}
		})
	}
}
