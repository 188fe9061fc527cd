package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	peer "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestWireContract compares our a2a.proto, compiled from source, with the
// descriptor a2a-go v2.3.1 generated from the specification's own file:
// every message, field (name, number, type, label, oneof, presence), enum
// value and method must be the same, so the two interoperate byte for
// byte. Only our file is compiled here, never linked, so the two
// descriptors of package lf.a2a.v1 do not meet in the global registry.
func TestWireContract(t *testing.T) {
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{"../../.."}})}
	files, err := c.Compile(context.Background(), protoFiles...)
	if err != nil {
		t.Fatal(err)
	}
	diffs := compareFiles(peer.File_a2av1_proto, files[0])
	for _, d := range diffs {
		t.Error(d)
	}
	if len(diffs) > 0 {
		t.Log("a2a/a2apb/a2a.proto must match the A2A v1.0.1 specification's field names, numbers and types exactly")
	}
}

// compareFiles lists how ours differs from want (the specification's file).
func compareFiles(want, ours protoreflect.FileDescriptor) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	if want.Package() != ours.Package() {
		add("package: want %s, got %s", want.Package(), ours.Package())
	}
	compareMessages(want.Messages(), ours.Messages(), add)
	compareEnums(want.Enums(), ours.Enums(), add)
	ws, os := want.Services(), ours.Services()
	for i := range ws.Len() {
		w := ws.Get(i)
		o := os.ByName(w.Name())
		if o == nil {
			add("service %s missing", w.FullName())
			continue
		}
		wm, om := w.Methods(), o.Methods()
		if wm.Len() != om.Len() {
			add("service %s: want %d methods, got %d", w.FullName(), wm.Len(), om.Len())
		}
		for j := range wm.Len() {
			m := wm.Get(j)
			x := om.ByName(m.Name())
			if x == nil {
				add("method %s missing", m.FullName())
				continue
			}
			if m.Input().FullName() != x.Input().FullName() || m.Output().FullName() != x.Output().FullName() ||
				m.IsStreamingClient() != x.IsStreamingClient() || m.IsStreamingServer() != x.IsStreamingServer() {
				add("method %s: want %s, got %s", m.FullName(), methodSig(m), methodSig(x))
			}
		}
	}
	if ws.Len() != os.Len() {
		add("want %d services, got %d", ws.Len(), os.Len())
	}
	return diffs
}

func methodSig(m protoreflect.MethodDescriptor) string {
	in, out := string(m.Input().FullName()), string(m.Output().FullName())
	if m.IsStreamingClient() {
		in = "stream " + in
	}
	if m.IsStreamingServer() {
		out = "stream " + out
	}
	return fmt.Sprintf("(%s) returns (%s)", in, out)
}

func compareMessages(want, ours protoreflect.MessageDescriptors, add func(string, ...any)) {
	for i := range want.Len() {
		w := want.Get(i)
		o := ours.ByName(w.Name())
		if o == nil {
			add("message %s missing", w.FullName())
			continue
		}
		wf, of := w.Fields(), o.Fields()
		for j := range wf.Len() {
			f := wf.Get(j)
			g := of.ByNumber(f.Number())
			if g == nil {
				add("%s: field %d (%s) missing", w.FullName(), f.Number(), f.Name())
				continue
			}
			if a, b := fieldSig(f), fieldSig(g); a != b {
				add("%s field %d: want %s, got %s", w.FullName(), f.Number(), a, b)
			}
		}
		for j := range of.Len() {
			if g := of.Get(j); wf.ByNumber(g.Number()) == nil {
				add("%s: field %d (%s) is not in the specification", w.FullName(), g.Number(), g.Name())
			}
		}
		compareMessages(w.Messages(), o.Messages(), add) // map entries
		compareEnums(w.Enums(), o.Enums(), add)
	}
	for i := range ours.Len() {
		if o := ours.Get(i); want.ByName(o.Name()) == nil {
			add("message %s is not in the specification", o.FullName())
		}
	}
}

// fieldSig is everything about a field that shows on the wire or in
// ProtoJSON.
func fieldSig(f protoreflect.FieldDescriptor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s json=%s", f.Cardinality(), f.Name(), f.JSONName())
	switch {
	case f.IsMap():
		fmt.Fprintf(&b, " map<%s,%s>", fieldType(f.MapKey()), fieldType(f.MapValue()))
	default:
		b.WriteString(" " + fieldType(f))
	}
	if f.IsPacked() {
		b.WriteString(" packed")
	}
	if o := f.ContainingOneof(); o != nil {
		if o.IsSynthetic() {
			b.WriteString(" optional")
		} else {
			b.WriteString(" oneof=" + string(o.Name()))
		}
	}
	if f.HasPresence() {
		b.WriteString(" presence")
	}
	return b.String()
}

func fieldType(f protoreflect.FieldDescriptor) string {
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return string(f.Message().FullName())
	case protoreflect.EnumKind:
		return string(f.Enum().FullName())
	}
	return f.Kind().String()
}

func compareEnums(want, ours protoreflect.EnumDescriptors, add func(string, ...any)) {
	for i := range want.Len() {
		w := want.Get(i)
		o := ours.ByName(w.Name())
		if o == nil {
			add("enum %s missing", w.FullName())
			continue
		}
		if a, b := enumValues(w), enumValues(o); !slices.Equal(a, b) {
			add("enum %s: want %v, got %v", w.FullName(), a, b)
		}
	}
	for i := range ours.Len() {
		if o := ours.Get(i); want.ByName(o.Name()) == nil {
			add("enum %s is not in the specification", o.FullName())
		}
	}
}

func enumValues(e protoreflect.EnumDescriptor) []string {
	vs := e.Values()
	out := make([]string, vs.Len())
	for i := range vs.Len() {
		out[i] = fmt.Sprintf("%s=%d", vs.Get(i).Name(), vs.Get(i).Number())
	}
	return out
}
