package sealkey_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"novaos.dev/novaos/internal/sealkey"
)

func Example() {
	dir, _ := os.MkdirTemp("", "data")
	defer os.RemoveAll(dir)

	// Nothing is written until the first Seal.
	s, err := sealkey.Open(filepath.Join(dir, "seal.key"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	const purpose = "novaos example-secret v1"
	v, err := s.Seal([]byte("s3cret"), purpose, "acme", "instance-1", "API_KEY")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.HasPrefix(v, sealkey.Prefix+s.KeyID()+":"))

	plain, err := s.Unseal(v, purpose, "acme", "instance-1", "API_KEY")
	fmt.Printf("%s %v\n", plain, err)

	// Copied to another tenant's row, it does not open.
	_, err = s.Unseal(v, purpose, "evil", "instance-1", "API_KEY")
	fmt.Println(errors.Is(err, sealkey.ErrNotOpened))
	// Output:
	// true
	// s3cret <nil>
	// true
}
