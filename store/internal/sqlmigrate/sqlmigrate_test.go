package sqlmigrate

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		files   fstest.MapFS
		want    []Migration
		wantErr bool
	}{
		{
			name: "ordered by number, other files ignored",
			files: fstest.MapFS{
				"m/0002_index.sql": {Data: []byte("CREATE INDEX i;")},
				"m/0001_init.sql":  {Data: []byte("CREATE TABLE t;")},
				"m/README.md":      {Data: []byte("notes")},
			},
			want: []Migration{
				{Version: 1, Name: "0001_init.sql", SQL: "CREATE TABLE t;"},
				{Version: 2, Name: "0002_index.sql", SQL: "CREATE INDEX i;"},
			},
		},
		{name: "gap", files: fstest.MapFS{"m/0001_a.sql": {}, "m/0003_c.sql": {}}, wantErr: true},
		{name: "repeat", files: fstest.MapFS{"m/0001_a.sql": {}, "m/1_b.sql": {}}, wantErr: true},
		{name: "bad name", files: fstest.MapFS{"m/init.sql": {}}, wantErr: true},
		{name: "zero", files: fstest.MapFS{"m/0000_a.sql": {}}, wantErr: true},
		{name: "empty", files: fstest.MapFS{"m/x.txt": {}}, wantErr: true},
		{name: "missing dir", files: fstest.MapFS{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(tt.files, "m")
			if (err != nil) != tt.wantErr {
				t.Fatalf("Load() error = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Load() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPending(t *testing.T) {
	all := []Migration{{Version: 1, Name: "a"}, {Version: 2, Name: "b"}, {Version: 3, Name: "c"}}
	tests := []struct {
		name    string
		applied []int
		want    []int
		newer   bool
	}{
		{name: "fresh", applied: nil, want: []int{1, 2, 3}},
		{name: "partly", applied: []int{1}, want: []int{2, 3}},
		{name: "up to date", applied: []int{3, 1, 2}, want: nil},
		{name: "newer", applied: []int{1, 2, 3, 4}, newer: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Pending(all, tt.applied)
			if tt.newer {
				if !errors.Is(err, ErrNewerSchema) {
					t.Fatalf("Pending() error = %v, want ErrNewerSchema", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var versions []int
			for _, m := range got {
				versions = append(versions, m.Version)
			}
			if diff := cmp.Diff(tt.want, versions); diff != "" {
				t.Errorf("Pending() versions (-want +got):\n%s", diff)
			}
		})
	}
}
