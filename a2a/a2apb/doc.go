// Package a2apb is the generated Go code of the A2A v1.0.1 gRPC binding.
//
// It holds the messages of proto package lf.a2a.v1, the A2AService client
// and the server interface. The wire contract is a2a.proto beside this file,
// written from the specification; package a2agrpc converts these messages to
// and from the wire model in package a2a, which is what the rest of NovaOS
// uses.
//
// The generated files are checked in and never edited. After a change to
// a2a.proto, or to a generator version pinned in
// internal/tools/protogen/go.mod, run from the repository root
//
//	go -C internal/tools/protogen run .
//
// (or go generate ./a2a/a2apb). TestGeneratedCodeIsCurrent fails while
// the checked-in files differ from what that command writes, and
// TestWireContract while a2a.proto differs in any field from the
// descriptor a2a-go v2.3.1 generated from the specification's own file.
//
// The descriptors register under the file path a2a/a2apb/a2a.proto. Another
// A2A package generated from the specification (a2a-go's a2apb, say)
// registers the same message names, so one binary can hold only one of them
// unless the protobuf registry's conflict policy is relaxed.
package a2apb

//go:generate go -C ../../internal/tools/protogen run .
