package keyfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"novaos.dev/novaos/internal/keyfile"
)

func TestCreateAndRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "k.key")
	if _, err := keyfile.Read(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read of a missing file: %v", err)
	}
	if err := keyfile.Create(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := keyfile.Create(path, []byte("two")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Create: %v", err)
	}
	got, err := keyfile.Read(path)
	if err != nil || string(got) != "one" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if runtime.GOOS != "windows" {
		for p, want := range map[string]fs.FileMode{path: 0o600, dir: 0o700} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), want)
			}
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

// Racing creators: exactly one wins, and every reader sees its content
// whole, never an empty or partial file.
func TestCreateRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.key")
	const n = 16
	var wg sync.WaitGroup
	wins := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			content := string(rune('a'+i)) + "-key-content"
			err := keyfile.Create(path, []byte(content))
			if err == nil {
				wins <- content
			} else if !errors.Is(err, fs.ErrExist) {
				t.Error(err)
			}
			if got, err := keyfile.Read(path); err != nil || len(got) != len(content) {
				t.Errorf("a racer read %q, %v", got, err)
			}
		}()
	}
	wg.Wait()
	close(wins)
	var won []string
	for w := range wins {
		won = append(won, w)
	}
	if len(won) != 1 {
		t.Fatalf("%d creators won: %v", len(won), won)
	}
	if got, _ := keyfile.Read(path); string(got) != won[0] {
		t.Fatalf("file holds %q, the winner wrote %q", got, won[0])
	}
}

func TestReadRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	if _, err := keyfile.Read(empty); !errors.Is(err, keyfile.ErrEmpty) {
		t.Errorf("empty file: %v", err)
	}
	if runtime.GOOS != "windows" {
		loose := filepath.Join(dir, "loose")
		os.WriteFile(loose, []byte("secret-content"), 0o600)
		os.Chmod(loose, 0o644)
		_, err := keyfile.Read(loose)
		var me *keyfile.ModeError
		if !errors.As(err, &me) || !errors.Is(err, keyfile.ErrLooseMode) || me.Mode.Perm() != 0o644 {
			t.Errorf("loose file: %v", err)
		}
		if err != nil && contains(err.Error(), "secret-content") {
			t.Error("the error holds the content")
		}
	}
	if _, err := keyfile.Read(dir); err == nil {
		t.Error("a directory read as a key file")
	}
}

func TestReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	if err := keyfile.Replace(path, []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if err := keyfile.Replace(path, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	got, err := keyfile.Read(path)
	if err != nil || string(got) != "v2" {
		t.Fatalf("Read = %q, %v", got, err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
