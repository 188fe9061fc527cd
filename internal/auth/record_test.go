package auth_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/auth"
)

func TestRecordRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := auth.ReadRecord(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no record: %v, want fs.ErrNotExist", err)
	}
	iss, err := auth.Open("", auth.Options{Issuer: "http://127.0.0.1:9123", Audience: "novaos-dev"})
	if err != nil {
		t.Fatal(err)
	}
	want := auth.Record{Issuer: "http://127.0.0.1:9123", Audience: "novaos-dev", Algorithm: auth.RS256}
	if diff := cmp.Diff(want, iss.Record()); diff != "" {
		t.Fatalf("Record (-want +got):\n%s", diff)
	}
	// A record of a server before algorithms were recorded still reads.
	for _, r := range []auth.Record{want, {Issuer: "https://novaos.example.com", Audience: "acp-agent", Algorithm: auth.EdDSA},
		{Issuer: "https://novaos.example.com", Audience: "acp-agent"}} {
		if err := auth.WriteRecord(dir, r); err != nil {
			t.Fatal(err)
		}
		got, err := auth.ReadRecord(dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("read back (-want +got):\n%s", diff)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, auth.RecordFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record file %v, %v: want mode 0600", fi, err)
	}
	// Replaced whole: no temporary file is left beside it.
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("data directory holds %d entries, want the record alone", len(entries))
	}
}

func TestRecordRefused(t *testing.T) {
	tests := []struct {
		name string
		rec  auth.Record
		file string // written as it is instead
		want string
	}{
		{name: "no issuer", rec: auth.Record{Audience: "a"}, file: `{"audience":"a"}`, want: "no issuer"},
		{name: "relative issuer", rec: auth.Record{Issuer: "novaos", Audience: "a"}, file: `{"issuer":"novaos","audience":"a"}`, want: "absolute URL"},
		{name: "no host", rec: auth.Record{Issuer: "http://", Audience: "a"}, file: `{"issuer":"http://","audience":"a"}`, want: "absolute URL"},
		{name: "no scheme", rec: auth.Record{Issuer: "//novaos.example.com", Audience: "a"}, file: `{"issuer":"//novaos.example.com","audience":"a"}`, want: "absolute URL"},
		{name: "bad URL", rec: auth.Record{Issuer: "http://[::1", Audience: "a"}, file: `{"issuer":"http://[::1","audience":"a"}`, want: "absolute URL"},
		{name: "no audience", rec: auth.Record{Issuer: "http://127.0.0.1:1"}, file: `{"issuer":"http://127.0.0.1:1"}`, want: "no audience"},
		{name: "unknown algorithm", rec: auth.Record{Issuer: "http://127.0.0.1:1", Audience: "a", Algorithm: "HS256"},
			file: `{"issuer":"http://127.0.0.1:1","audience":"a","algorithm":"HS256"}`, want: "not RS256 or EdDSA"},
		{name: "not JSON", file: `issuer = "http://127.0.0.1:1"`, want: "not JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.rec != (auth.Record{}) {
				if err := auth.WriteRecord(dir, tc.rec); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("WriteRecord = %v, want an error saying %q", err, tc.want)
				}
				if _, err := os.Stat(filepath.Join(dir, auth.RecordFile)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a refused record was written: %v", err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, auth.RecordFile), []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := auth.ReadRecord(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), auth.RecordFile) {
				t.Errorf("ReadRecord = %v, want an error naming the file and saying %q", err, tc.want)
			}
		})
	}
	// A record other users could have changed is refused, as the keys are.
	dir := t.TempDir()
	path := filepath.Join(dir, auth.RecordFile)
	if err := os.WriteFile(path, []byte(`{"issuer":"http://127.0.0.1:1","audience":"a"}`), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)
	if _, err := auth.ReadRecord(dir); err == nil {
		t.Error("a record others may write was read")
	}
}
