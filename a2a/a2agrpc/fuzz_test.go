package a2agrpc_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"novaos.dev/novaos/a2a/a2agrpc"
)

// FuzzFromPB feeds arbitrary bytes to proto.Unmarshal into one of the
// methods' messages (the first byte picks which) and the result through
// the model: reading must not panic and fails only with a *FieldError;
// what it reads must convert back, marshal, and read again to the same
// value, and the a2a package's JSON of it must be the ProtoJSON of its
// conversion.
func FuzzFromPB(f *testing.F) {
	values := handMade()
	for name, v := range fixtures(f) {
		values[name] = v
	}
	for _, v := range values {
		k := kindOf(f, v)
		pb, err := k.to(v)
		if err != nil {
			f.Fatal(err)
		}
		wire, err := proto.Marshal(pb)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{byte(kindIndex(k))}, wire...))
	}
	for i := range kinds {
		f.Add([]byte{byte(i)})
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		k := kinds[int(b[0])%len(kinds)]
		pb := k.newPB()
		if proto.Unmarshal(b[1:], pb) != nil {
			return
		}
		v, err := k.from(pb)
		if err != nil {
			var fe *a2agrpc.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("%s: error %v (%T) is not a *FieldError", k.name, err, err)
			}
			return
		}
		pb2, err := k.to(v)
		if err != nil {
			t.Fatalf("%s: read but does not convert back: %v", k.name, err)
		}
		wire, err := proto.Marshal(pb2)
		if err != nil {
			t.Fatalf("%s: converted back but does not marshal: %v", k.name, err)
		}
		pb3 := k.newPB()
		if err := proto.Unmarshal(wire, pb3); err != nil {
			t.Fatal(err)
		}
		v2, err := k.from(pb3)
		if err != nil {
			t.Fatalf("%s: second read failed: %v", k.name, err)
		}
		if d := cmp.Diff(v, v2, modelOpts); d != "" {
			t.Fatalf("%s: a2a → pb → a2a is not stable (-first +second):\n%s", k.name, d)
		}
		sameWire(t, k, v, pb2)
	})
}

func kindIndex(k kind) int {
	for i := range kinds {
		if kinds[i].name == k.name {
			return i
		}
	}
	return 0
}

// FuzzError feeds arbitrary bytes as a google.rpc.Status a peer sent:
// reading it must not panic, and the error read must answer again as a
// status that marshals.
func FuzzError(f *testing.F) {
	info, _ := anypb.New(&errdetails.ErrorInfo{Reason: "TASK_NOT_CANCELABLE", Domain: "a2a-protocol.org", Metadata: map[string]string{"taskId": "t"}})
	other, _ := anypb.New(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "id", Description: "empty"}}})
	for _, s := range []*spb.Status{
		{Code: int32(codes.FailedPrecondition), Message: "done", Details: []*anypb.Any{info}},
		{Code: int32(codes.InvalidArgument), Message: "bad", Details: []*anypb.Any{other, info}},
		{Code: int32(codes.NotFound)},
		{Code: 99, Details: []*anypb.Any{{TypeUrl: "type.googleapis.com/unknown.Type", Value: []byte{1, 2}}}},
	} {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s spb.Status
		if proto.Unmarshal(b, &s) != nil {
			return
		}
		st := status.FromProto(&s)
		if st.Code() == codes.OK {
			return // not an error
		}
		e := a2agrpc.Error(st.Err())
		if e == nil {
			t.Fatal("a failed status read as no error")
		}
		if _, err := proto.Marshal(a2agrpc.Status(e).Proto()); err != nil {
			t.Fatalf("status of %v does not marshal: %v", e, err)
		}
	})
}
