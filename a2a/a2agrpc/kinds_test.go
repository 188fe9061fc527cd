package a2agrpc_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2apb"
)

// kind is one message of the eleven methods, with both conversions and
// the a2a package's JSON encoding of the model type. The tests and fuzz
// targets walk this table, so a message missing here is untested
// everywhere: TestEveryMethodMessageHasAKind guards that.
type kind struct {
	name  string
	newPB func() proto.Message
	from  func(proto.Message) (any, error)
	to    func(any) (proto.Message, error)
	// enc is the a2a package's JSON encoding of the model value.
	enc func(any) ([]byte, error)
}

func mk[A any, P proto.Message](newPB func() P, from func(P) (*A, error), to func(*A) (P, error), enc func(*A) ([]byte, error)) kind {
	return kind{
		name:  string(newPB().ProtoReflect().Descriptor().Name()),
		newPB: func() proto.Message { return newPB() },
		from:  func(m proto.Message) (any, error) { return from(m.(P)) },
		to:    func(v any) (proto.Message, error) { return to(v.(*A)) },
		enc:   func(v any) ([]byte, error) { return enc(v.(*A)) },
	}
}

// plain adapts a conversion that cannot fail.
func plain[X, Y any](f func(X) Y) func(X) (Y, error) {
	return func(x X) (Y, error) { return f(x), nil }
}

func jsonEnc[A any](v *A) ([]byte, error) { return json.Marshal(v) }

var kinds = []kind{
	mk(func() *a2apb.SendMessageRequest { return &a2apb.SendMessageRequest{} }, a2agrpc.SendMessageRequestFromPB, a2agrpc.SendMessageRequestToPB,
		func(r *a2a.SendMessageRequest) ([]byte, error) { return a2a.AppendSendMessageRequest(nil, r) }),
	mk(func() *a2apb.SendMessageResponse { return &a2apb.SendMessageResponse{} }, a2agrpc.SendMessageResponseFromPB, a2agrpc.SendMessageResponseToPB,
		func(r *a2a.SendMessageResponse) ([]byte, error) { return a2a.AppendSendMessageResponse(nil, r) }),
	mk(func() *a2apb.StreamResponse { return &a2apb.StreamResponse{} }, a2agrpc.StreamResponseFromPB, a2agrpc.StreamResponseToPB,
		func(r *a2a.StreamResponse) ([]byte, error) { return a2a.AppendStreamResponse(nil, r) }),
	mk(func() *a2apb.Task { return &a2apb.Task{} }, a2agrpc.TaskFromPB, a2agrpc.TaskToPB,
		func(t *a2a.Task) ([]byte, error) { return a2a.AppendTask(nil, t) }),
	mk(func() *a2apb.GetTaskRequest { return &a2apb.GetTaskRequest{} }, plain(a2agrpc.GetTaskRequestFromPB), plain(a2agrpc.GetTaskRequestToPB), jsonEnc[a2a.GetTaskRequest]),
	mk(func() *a2apb.ListTasksRequest { return &a2apb.ListTasksRequest{} }, a2agrpc.ListTasksRequestFromPB, a2agrpc.ListTasksRequestToPB, jsonEnc[a2a.ListTasksRequest]),
	mk(func() *a2apb.ListTasksResponse { return &a2apb.ListTasksResponse{} }, a2agrpc.ListTasksResponseFromPB, a2agrpc.ListTasksResponseToPB, jsonEnc[a2a.ListTasksResponse]),
	mk(func() *a2apb.CancelTaskRequest { return &a2apb.CancelTaskRequest{} }, a2agrpc.CancelTaskRequestFromPB, a2agrpc.CancelTaskRequestToPB, jsonEnc[a2a.CancelTaskRequest]),
	mk(func() *a2apb.SubscribeToTaskRequest { return &a2apb.SubscribeToTaskRequest{} }, plain(a2agrpc.SubscribeToTaskRequestFromPB), plain(a2agrpc.SubscribeToTaskRequestToPB), jsonEnc[a2a.SubscribeToTaskRequest]),
	mk(func() *a2apb.TaskPushNotificationConfig { return &a2apb.TaskPushNotificationConfig{} }, plain(a2agrpc.TaskPushNotificationConfigFromPB), plain(a2agrpc.TaskPushNotificationConfigToPB), jsonEnc[a2a.TaskPushNotificationConfig]),
	mk(func() *a2apb.GetTaskPushNotificationConfigRequest {
		return &a2apb.GetTaskPushNotificationConfigRequest{}
	},
		plain(a2agrpc.GetTaskPushNotificationConfigRequestFromPB), plain(a2agrpc.GetTaskPushNotificationConfigRequestToPB), jsonEnc[a2a.GetTaskPushNotificationConfigRequest]),
	mk(func() *a2apb.DeleteTaskPushNotificationConfigRequest {
		return &a2apb.DeleteTaskPushNotificationConfigRequest{}
	},
		plain(a2agrpc.DeleteTaskPushNotificationConfigRequestFromPB), plain(a2agrpc.DeleteTaskPushNotificationConfigRequestToPB), jsonEnc[a2a.DeleteTaskPushNotificationConfigRequest]),
	mk(func() *a2apb.ListTaskPushNotificationConfigsRequest {
		return &a2apb.ListTaskPushNotificationConfigsRequest{}
	},
		plain(a2agrpc.ListTaskPushNotificationConfigsRequestFromPB), plain(a2agrpc.ListTaskPushNotificationConfigsRequestToPB), jsonEnc[a2a.ListTaskPushNotificationConfigsRequest]),
	mk(func() *a2apb.ListTaskPushNotificationConfigsResponse {
		return &a2apb.ListTaskPushNotificationConfigsResponse{}
	},
		plain(a2agrpc.ListTaskPushNotificationConfigsResponseFromPB), plain(a2agrpc.ListTaskPushNotificationConfigsResponseToPB), jsonEnc[a2a.ListTaskPushNotificationConfigsResponse]),
	mk(func() *a2apb.GetExtendedAgentCardRequest { return &a2apb.GetExtendedAgentCardRequest{} },
		plain(a2agrpc.GetExtendedAgentCardRequestFromPB), plain(a2agrpc.GetExtendedAgentCardRequestToPB), jsonEnc[a2a.GetExtendedAgentCardRequest]),
	mk(func() *a2apb.AgentCard { return &a2apb.AgentCard{} }, a2agrpc.AgentCardFromPB, a2agrpc.AgentCardToPB, jsonEnc[a2a.AgentCard]),
}

func kindOf(t testing.TB, v any) kind {
	t.Helper()
	name := reflect.TypeOf(v).Elem().Name()
	for _, k := range kinds {
		if k.name == name {
			return k
		}
	}
	t.Fatalf("no kind for %T", v)
	return kind{}
}

// TestEveryMethodMessageHasAKind holds the table to the service: every
// input and output of A2AService except google.protobuf.Empty.
func TestEveryMethodMessageHasAKind(t *testing.T) {
	have := map[protoreflect.Name]bool{}
	for _, k := range kinds {
		have[k.newPB().ProtoReflect().Descriptor().Name()] = true
	}
	methods := a2apb.File_a2a_a2apb_a2a_proto.Services().ByName("A2AService").Methods()
	if methods.Len() != 11 {
		t.Errorf("A2AService has %d methods, want 11", methods.Len())
	}
	for i := range methods.Len() {
		m := methods.Get(i)
		for _, md := range []protoreflect.MessageDescriptor{m.Input(), m.Output()} {
			if md.FullName() != "google.protobuf.Empty" && !have[md.Name()] {
				t.Errorf("%s uses %s, which has no entry in kinds", m.Name(), md.Name())
			}
		}
	}
}

// modelOpts compares model values the way a reader of their JSON sees
// them: empty and nil alike, data parts and OAuth flows by JSON value,
// times by instant.
var modelOpts = cmp.Options{
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type() != rawType }, cmpopts.EquateEmpty()),
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type() == rawType },
		cmp.Comparer(func(a, b json.RawMessage) bool { return sameJSON(a, b) })),
}

var rawType = reflect.TypeFor[json.RawMessage]()

func sameJSON(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(bytes.TrimSpace(a)) == len(bytes.TrimSpace(b))
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// ---------------------------------------------------------------- JSON values compared by schema

// jsonValue decodes b as a reader of either encoding would see it,
// against the message descriptor md: members that hold their field's
// default and have no presence are dropped (one encoder writes
// "messageId":"" where the other omits it, and a reader cannot tell),
// null is absent unless the field is a google.protobuf.Value,
// timestamps become instants at millisecond precision (the a2a encoders
// write milliseconds), and everything else is kept.
func jsonValue(t testing.TB, b []byte, md protoreflect.MessageDescriptor) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return normalize(t, v, md)
}

func normalize(t testing.TB, v any, md protoreflect.MessageDescriptor) any {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		s, _ := v.(string)
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("timestamp %q: %v", s, err)
		}
		return ts.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		return v // user data: compared as decoded
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for key, x := range obj {
		fd := md.Fields().ByJSONName(key)
		if fd == nil {
			t.Fatalf("%s has no field %q", md.FullName(), key)
		}
		if !fd.HasPresence() && isDefault(x, fd) {
			continue
		}
		if x == nil && (fd.Message() == nil || fd.Message().FullName() != "google.protobuf.Value") {
			continue // null is ProtoJSON for "not set", except for a Value
		}
		switch {
		case fd.IsMap():
			m := map[string]any{}
			for mk, mv := range x.(map[string]any) {
				if vd := fd.MapValue().Message(); vd != nil {
					mv = normalize(t, mv, vd)
				}
				m[mk] = mv
			}
			x = m
		case fd.IsList():
			if ed := fd.Message(); ed != nil {
				l := x.([]any)
				for i := range l {
					l[i] = normalize(t, l[i], ed)
				}
			}
		case fd.Message() != nil:
			x = normalize(t, x, fd.Message())
			if fd.Message().FullName() == "google.protobuf.Timestamp" && x == "0001-01-01T00:00:00Z" {
				continue // the a2a encoders write no time that truncates to zero
			}
		}
		out[key] = x
	}
	return out
}

func isDefault(x any, fd protoreflect.FieldDescriptor) bool {
	switch x := x.(type) {
	case nil:
		return true
	case string:
		if fd.Kind() == protoreflect.EnumKind {
			return fd.Enum().Values().ByNumber(0).Name() == protoreflect.Name(x)
		}
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return fd.IsMap() && len(x) == 0
	}
	return false
}

// sameWire checks that the a2a package's JSON for v and ProtoJSON for its
// conversion are one JSON value.
func sameWire(t testing.TB, k kind, v any, pb proto.Message) {
	t.Helper()
	ours, err := k.enc(v)
	if err != nil {
		t.Fatalf("a2a JSON of %s: %v", k.name, err)
	}
	theirs, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatalf("protojson of %s: %v", k.name, err)
	}
	md := pb.ProtoReflect().Descriptor()
	if d := cmp.Diff(jsonValue(t, theirs, md), jsonValue(t, ours, md)); d != "" {
		t.Errorf("%s: a2a JSON and ProtoJSON differ (-protojson +a2a):\n%s\na2a:       %s\nprotojson: %s", k.name, d, ours, theirs)
	}
}

// ---------------------------------------------------------------- fixtures

// seeds reads the inputs of one of package a2a's fuzz corpora: the JSON
// documents its decoders are tested with.
func seeds(t testing.TB, target string) map[string][]byte {
	t.Helper()
	dir := filepath.Join("..", "testdata", "fuzz", target)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(string(b), "\n", 3)
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "[]byte(") {
			t.Fatalf("%s/%s: not a one-value corpus file", target, e.Name())
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s/%s: %v", target, e.Name(), err)
		}
		out[e.Name()] = []byte(s)
	}
	return out
}

// fixtures are model values decoded from package a2a's corpora with its
// own reader, one or more per kind, named by where they came from.
func fixtures(t testing.TB) map[string]any {
	t.Helper()
	out := map[string]any{}
	for name, b := range seeds(t, "FuzzTask") {
		var task a2a.Task
		if a2a.Unmarshal(b, &task) == nil {
			out["FuzzTask/"+name] = &task
			out["FuzzTask/"+name+"/list"] = &a2a.ListTasksResponse{Tasks: []a2a.Task{task}, NextPageToken: "n", PageSize: 1, TotalSize: 2}
			out["FuzzTask/"+name+"/frame"] = &a2a.StreamResponse{Task: &task}
		}
	}
	for name, b := range seeds(t, "FuzzMessage") {
		var msg a2a.Message
		if a2a.Unmarshal(b, &msg) == nil {
			out["FuzzMessage/"+name] = &a2a.SendMessageResponse{Message: &msg}
		}
	}
	for name, b := range seeds(t, "FuzzPart") {
		var p a2a.Part
		if a2a.Unmarshal(b, &p) == nil {
			out["FuzzPart/"+name] = &a2a.StreamResponse{Message: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{p}}}
		}
	}
	for name, b := range seeds(t, "FuzzAgentCard") {
		var c a2a.AgentCard
		if a2a.Unmarshal(b, &c) == nil {
			out["FuzzAgentCard/"+name] = &c
		}
	}
	params := map[string]func() any{
		"SendMessage":                      func() any { return &a2a.SendMessageRequest{} },
		"SendStreamingMessage":             func() any { return &a2a.SendMessageRequest{} },
		"GetTask":                          func() any { return &a2a.GetTaskRequest{} },
		"ListTasks":                        func() any { return &a2a.ListTasksRequest{} },
		"CancelTask":                       func() any { return &a2a.CancelTaskRequest{} },
		"SubscribeToTask":                  func() any { return &a2a.SubscribeToTaskRequest{} },
		"CreateTaskPushNotificationConfig": func() any { return &a2a.TaskPushNotificationConfig{} },
		"GetTaskPushNotificationConfig":    func() any { return &a2a.GetTaskPushNotificationConfigRequest{} },
		"DeleteTaskPushNotificationConfig": func() any { return &a2a.DeleteTaskPushNotificationConfigRequest{} },
		"ListTaskPushNotificationConfigs":  func() any { return &a2a.ListTaskPushNotificationConfigsRequest{} },
		"GetExtendedAgentCard":             func() any { return &a2a.GetExtendedAgentCardRequest{} },
	}
	for name, b := range seeds(t, "FuzzDecodeRequest") {
		req, rpcErr := a2a.DecodeRequest(b)
		if rpcErr != nil {
			continue
		}
		newParams, ok := params[req.Method]
		if !ok {
			continue
		}
		p := newParams()
		if a2a.DecodeParams(req.Params, p) == nil {
			out["FuzzDecodeRequest/"+name] = p
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d fixtures decoded from package a2a's corpora", len(out))
	}
	return out
}
