package keyfile_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"novaos.dev/novaos/internal/keyfile"
)

func Example() {
	dir, _ := os.MkdirTemp("", "keys")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "data", "signing.key")

	data, err := keyfile.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		err = keyfile.Create(path, []byte("a new key\n"))
		if errors.Is(err, fs.ErrExist) {
			err = nil // another process made it first: use theirs
		}
		if err == nil {
			data, err = keyfile.Read(path)
		}
	}
	fi, _ := os.Stat(path)
	fmt.Printf("%q %v %v\n", data, fi.Mode().Perm(), err)
	// Output: "a new key\n" -rw------- <nil>
}
