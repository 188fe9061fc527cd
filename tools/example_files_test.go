package tools_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"novaos.dev/novaos/tools"
)

// A file is written in an agent's area, replaced only at the version the
// writer read, and a put past the tenant's quota is refused with what
// would have run out.
func ExampleMemoryFileStore() {
	ctx := context.Background()
	s := tools.NewMemoryFileStore()
	quota := tools.FileQuota{Bytes: 16, Files: 10}
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	k := tools.FileKey{Tenant: "acme", Agent: "researcher", Path: "notes/plan.md"}

	v1, err := s.Put(ctx, tools.FilePut{FileKey: k, Content: []byte("read"), ContentType: "text/markdown", Quota: quota, Now: now})
	if err != nil {
		panic(err)
	}
	v2, err := s.Put(ctx, tools.FilePut{FileKey: k, Content: []byte("read, write"), IfVersion: &v1.Version, Quota: quota, Now: now})
	if err != nil {
		panic(err)
	}
	_, err = s.Put(ctx, tools.FilePut{FileKey: k, Content: []byte("stale"), IfVersion: &v1.Version, Quota: quota, Now: now})
	fmt.Println("stale write:", errors.Is(err, tools.ErrFileConflict))

	_, err = s.Put(ctx, tools.FilePut{FileKey: tools.FileKey{Tenant: "acme", Path: "shared.txt"}, Content: []byte("0123456789"), Quota: quota})
	var qe *tools.QuotaError
	if errors.As(err, &qe) {
		fmt.Printf("quota: %s would be %d of %d\n", qe.Kind, qe.Want, qe.Quota)
	}
	u, _ := s.Usage(ctx, "acme")
	fmt.Println("version", v2.Version, "usage", u.Bytes, "bytes in", u.Files, "file")
	// Output:
	// stale write: true
	// quota: bytes would be 21 of 16
	// version 2 usage 11 bytes in 1 file
}
