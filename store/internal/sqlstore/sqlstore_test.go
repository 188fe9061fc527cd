package sqlstore

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
)

func TestStateList(t *testing.T) {
	tests := []struct {
		name string
		in   []a2a.TaskState
		want string
	}{
		{"one", []a2a.TaskState{a2a.TaskStateWorking}, "('TASK_STATE_WORKING')"},
		{"several", []a2a.TaskState{a2a.TaskStateUnspecified, a2a.TaskStateSubmitted},
			"('TASK_STATE_UNSPECIFIED', 'TASK_STATE_SUBMITTED')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StateList(tt.in); got != tt.want {
				t.Errorf("StateList = %s, want %s", got, tt.want)
			}
		})
	}
}

// rows is a result set of encoded bodies, failing where told.
type rows struct {
	bodies  [][]byte
	i       int
	scanErr error
	err     error
}

func (r *rows) Next() bool { r.i++; return r.i <= len(r.bodies) }
func (r *rows) Err() error { return r.err }
func (r *rows) Scan(dest ...any) error {
	if r.scanErr != nil {
		return r.scanErr
	}
	*dest[0].(*[]byte) = r.bodies[r.i-1]
	return nil
}

func TestScanBodies(t *testing.T) {
	errScan, errRows, errDecode := errors.New("scan"), errors.New("rows"), errors.New("decode")
	decode := func(b []byte) (string, error) {
		if string(b) == "bad" {
			return "", errDecode
		}
		return string(b), nil
	}
	tests := []struct {
		name    string
		rows    *rows
		want    []string
		wantErr error
	}{
		{"none", &rows{}, nil, nil},
		{"in order", &rows{bodies: [][]byte{[]byte("a"), []byte("b")}}, []string{"a", "b"}, nil},
		{"a body that does not decode", &rows{bodies: [][]byte{[]byte("a"), []byte("bad")}}, nil, errDecode},
		{"a scan that fails", &rows{bodies: [][]byte{[]byte("a")}, scanErr: errScan}, nil, errScan},
		{"a result set that fails", &rows{bodies: [][]byte{[]byte("a")}, err: errRows}, nil, errRows},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ScanBodies(tc.rows, decode)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ScanBodies error %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("ScanBodies (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestDecodeAgent(t *testing.T) {
	a, err := DecodeAgent([]byte(`{"id":"a1","name":"scout"}`))
	if err != nil || a.ID != "a1" || a.Name != "scout" {
		t.Errorf("DecodeAgent = %+v, %v", a, err)
	}
	if _, err := DecodeAgent([]byte(`{`)); err == nil {
		t.Error("DecodeAgent accepted a body that is not JSON")
	}
}
