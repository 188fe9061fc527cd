package a2agrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2apb"
)

// FieldError is a value that has no counterpart on the other side of a
// conversion: a part with no content, an enum number A2A v1.0.1 does not
// define, a timestamp outside years 1 to 9999, a number JSON cannot
// write. Path locates the field (message.parts[1].data); Err says what is
// wrong and matches the a2a package's errors where they exist
// (errors.Is(err, a2a.ErrPartContent)).
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return "a2agrpc: " + e.Err.Error()
	}
	return "a2agrpc: " + e.Path + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

// Errors a FieldError wraps.
var (
	// ErrEnumValue is an enum number A2A v1.0.1 does not define. The JSON
	// reader maps unknown enum names to UNSPECIFIED; a number outside the
	// enum is refused here, since nothing could write it back.
	ErrEnumValue = errors.New("enum value not defined by A2A v1.0.1")
	// ErrNoValue is a google.protobuf.Value with none of its kinds set,
	// which has no JSON form.
	ErrNoValue = errors.New("value has no kind set")
	// ErrNumber is NaN or an infinity, which JSON cannot hold.
	ErrNumber = errors.New("number is NaN or infinite")
	// ErrDepth is a JSON value nested deeper than maxDepth, or a cycle.
	ErrDepth = fmt.Errorf("value nested deeper than %d levels", maxDepth)
	// ErrOneof is a wire-model value with more than one member of a
	// proto oneof set (a SendMessageResponse with both a task and a
	// message), which protobuf cannot carry.
	ErrOneof = errors.New("more than one member of a oneof is set")
)

// maxDepth bounds the nesting of free-form values (metadata, data parts).
// Each JSON level is three protobuf messages deep (Value, Struct, map
// entry), and protobuf readers stop at 10,000, so a value much deeper
// than this could be written but not read; the bound also stops a cycle
// in a map built in memory.
const maxDepth = 3000

// at puts err under the field name: the path grows from the leaf up, and
// only when a conversion fails.
func at(name string, err error) error {
	if err == nil {
		return nil
	}
	if fe, ok := err.(*FieldError); ok {
		sep := "."
		if fe.Path == "" || strings.HasPrefix(fe.Path, "[") {
			sep = ""
		}
		return &FieldError{Path: name + sep + fe.Path, Err: fe.Err}
	}
	return &FieldError{Path: name, Err: err}
}

func atIndex(name string, i int, err error) error {
	if err == nil {
		return nil
	}
	return at(name+"["+strconv.Itoa(i)+"]", err)
}

// wrap makes a conversion failure a *FieldError even at the top level.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*FieldError); ok {
		return err
	}
	return &FieldError{Err: err}
}

// validString returns s with each byte that is not part of valid UTF-8
// replaced by U+FFFD, as the a2a JSON encoders write it; protobuf refuses
// to marshal a string field that is not UTF-8.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// validStrings is validString over a list; a list with nothing to replace
// is shared, not copied.
func validStrings(ss []string) []string {
	for i, s := range ss {
		if !utf8.ValidString(s) {
			out := make([]string, len(ss))
			copy(out, ss[:i])
			for j := i; j < len(ss); j++ {
				out[j] = validString(ss[j])
			}
			return out
		}
	}
	return ss
}

// emptyToNil gives a repeated field read from protobuf the nil an absent
// JSON member decodes to, so that conversions agree on one form.
func emptyToNil(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	return ss
}

// ---------------------------------------------------------------- JSON values

// structToPB converts free-form metadata. Empty metadata is absent, as
// the JSON encoders omit it.
func structToPB(m map[string]any) (*structpb.Struct, error) {
	if len(m) == 0 {
		return nil, nil
	}
	return mapToPB(m, 0)
}

func mapToPB(m map[string]any, depth int) (*structpb.Struct, error) {
	if depth >= maxDepth {
		return nil, ErrDepth
	}
	s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(m))}
	for k, v := range m {
		pv, err := valueToPB(v, depth+1)
		if err != nil {
			return nil, at(strconv.Quote(k), err)
		}
		s.Fields[validString(k)] = pv
	}
	return s, nil
}

// valueToPB converts what encoding/json decodes into an interface, Go's
// other scalars, json.Number and json.RawMessage; any other value goes
// through encoding/json first, as the a2a encoders do with it.
func valueToPB(v any, depth int) (*structpb.Value, error) {
	switch v := v.(type) {
	case nil:
		return structpb.NewNullValue(), nil
	case string:
		return structpb.NewStringValue(validString(v)), nil
	case bool:
		return structpb.NewBoolValue(v), nil
	case float64:
		return numberToPB(v)
	case float32:
		return numberToPB(float64(v))
	case int:
		return structpb.NewNumberValue(float64(v)), nil
	case int64:
		return structpb.NewNumberValue(float64(v)), nil
	case int32:
		return structpb.NewNumberValue(float64(v)), nil
	case uint64:
		return structpb.NewNumberValue(float64(v)), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, fmt.Errorf("number %q: %w", string(v), err)
		}
		return numberToPB(f)
	case json.RawMessage:
		return jsonToPB(v, depth)
	case map[string]any:
		s, err := mapToPB(v, depth)
		if err != nil {
			return nil, err
		}
		return structpb.NewStructValue(s), nil
	case []any:
		if depth >= maxDepth {
			return nil, ErrDepth
		}
		l := &structpb.ListValue{Values: make([]*structpb.Value, len(v))}
		for i, e := range v {
			pv, err := valueToPB(e, depth+1)
			if err != nil {
				return nil, atIndex("", i, err)
			}
			l.Values[i] = pv
		}
		return structpb.NewListValue(l), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonToPB(b, depth)
}

func numberToPB(f float64) (*structpb.Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, ErrNumber
	}
	return structpb.NewNumberValue(f), nil
}

// jsonToPB converts an encoded JSON value; empty input is null, as the
// encoders write an empty data part.
func jsonToPB(raw []byte, depth int) (*structpb.Value, error) {
	if len(raw) == 0 {
		return structpb.NewNullValue(), nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("invalid JSON value: %w", err)
	}
	return valueToPB(v, depth)
}

// structFromPB converts metadata; an empty struct reads as absent.
func structFromPB(s *structpb.Struct) (map[string]any, error) {
	if len(s.GetFields()) == 0 {
		return nil, nil
	}
	return mapFromPB(s, 0)
}

func mapFromPB(s *structpb.Struct, depth int) (map[string]any, error) {
	if depth >= maxDepth {
		return nil, ErrDepth
	}
	m := make(map[string]any, len(s.GetFields()))
	for k, v := range s.GetFields() {
		x, err := valueFromPB(v, depth+1)
		if err != nil {
			return nil, at(strconv.Quote(k), err)
		}
		m[k] = x
	}
	return m, nil
}

// valueFromPB returns what encoding/json would decode from the value's
// JSON form: nil, bool, float64, string, []any or map[string]any.
func valueFromPB(v *structpb.Value, depth int) (any, error) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return nil, nil
	case *structpb.Value_BoolValue:
		return k.BoolValue, nil
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return nil, ErrNumber
		}
		return k.NumberValue, nil
	case *structpb.Value_StringValue:
		return k.StringValue, nil
	case *structpb.Value_StructValue:
		return mapFromPB(k.StructValue, depth)
	case *structpb.Value_ListValue:
		if depth >= maxDepth {
			return nil, ErrDepth
		}
		vals := k.ListValue.GetValues()
		out := make([]any, len(vals))
		for i, e := range vals {
			x, err := valueFromPB(e, depth+1)
			if err != nil {
				return nil, atIndex("", i, err)
			}
			out[i] = x
		}
		return out, nil
	}
	return nil, ErrNoValue
}

// jsonFromPB encodes a value as a data part holds it.
func jsonFromPB(v *structpb.Value) (json.RawMessage, error) {
	x, err := valueFromPB(v, 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(x)
}

// ---------------------------------------------------------------- timestamps and enums

// timeToPB keeps the full precision of t; the zero time is absent.
func timeToPB(t time.Time) (*timestamppb.Timestamp, error) {
	if t.IsZero() {
		return nil, nil
	}
	ts := timestamppb.New(t)
	if err := ts.CheckValid(); err != nil {
		return nil, err
	}
	return ts, nil
}

// timeFromPB refuses what a2a.ParseTimestamp refuses: times outside
// years 1 to 9999, and nanoseconds out of range.
func timeFromPB(ts *timestamppb.Timestamp) (time.Time, error) {
	if ts == nil {
		return time.Time{}, nil
	}
	if err := ts.CheckValid(); err != nil {
		return time.Time{}, err
	}
	return ts.AsTime(), nil
}

// The enums' numbers are the proto's on both sides; TestEnumsAgree holds
// the names together.

func roleToPB(r a2a.Role) a2apb.Role {
	if r < a2a.RoleUnspecified || r > a2a.RoleAgent {
		return a2apb.Role_ROLE_UNSPECIFIED // what the JSON encoder writes for it
	}
	return a2apb.Role(r)
}

func roleFromPB(r a2apb.Role) (a2a.Role, error) {
	if r < a2apb.Role_ROLE_UNSPECIFIED || r > a2apb.Role_ROLE_AGENT {
		return 0, fmt.Errorf("%w: role %d", ErrEnumValue, int32(r))
	}
	return a2a.Role(r), nil
}

func stateToPB(s a2a.TaskState) a2apb.TaskState {
	if s < a2a.TaskStateUnspecified || s > a2a.TaskStateAuthRequired {
		return a2apb.TaskState_TASK_STATE_UNSPECIFIED
	}
	return a2apb.TaskState(s)
}

func stateFromPB(s a2apb.TaskState) (a2a.TaskState, error) {
	if s < a2apb.TaskState_TASK_STATE_UNSPECIFIED || s > a2apb.TaskState_TASK_STATE_AUTH_REQUIRED {
		return 0, fmt.Errorf("%w: task state %d", ErrEnumValue, int32(s))
	}
	return a2a.TaskState(s), nil
}
