package memorysvc

import "testing"

// Mutation testing (scripts/mutate ./internal/memorysvc door.go): two
// mutants live and are equivalent, since no input can observe them:
//   - door.go:67:11, scanTop's "end < 0" made "end <= 0": stringEnd
//     returns -1 or the index of a closing quote, which is after the
//     opening one, so never 0.
//   - door.go:118:30, isJSONRPC's "IndexByte(q, '\\') < 0" made "<= 0": q
//     is a quoted string, so its first byte is '"' and a backslash is
//     never at index 0.
// door.go:107:5 (stringEnd's escape skip made i--) loops for ever on a
// backslash and times out: detected. gremlins reports decodeDoor's case conditions (199, 201) as not
// covered, since a case expression lies outside Go's coverage blocks;
// made by hand, each of their three mutants fails TestDoorGolden (a null
// or absent payload or context is {}, a non-object one is refused). The
// mutant at 229, in the message of writeDoorError's panic, cannot be
// reached: a problem of strings and an int always encodes.

// TestDoorShapedCutShort: a body over the size limit is answered in the
// shape it began in, read from the bytes before the limit: a door request
// is an object whose top level has shown no jsonrpc member so far.
func TestDoorShapedCutShort(t *testing.T) {
	for _, tt := range []struct {
		partial string
		door    bool
	}{
		{``, false},
		{" \t\r\n", false},
		{`[{"tool":"memory.write"`, false},
		{`"tool"`, false},
		{`{"tool":"memory.write","payload":{"content":"xxx`, true},
		{"\n\t\r {\"tool\":\"memory.write\",\"payload\":{\"content\":\"xx", true},
		{`{`, true},
		// a jsonrpc member inside the payload is the payload's
		{`{"tool":"memory.write","payload":{"jsonrpc":"2.0","content":"xx`, true},
		{`{"jsonrpc":"2.0","id":1,"params":{"arguments":{"content":"xx`, false},
		{"\n{\"id\":1,\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"x\":\"xx", false},
		// the member's name is cut: no jsonrpc member yet
		{`{"id":1,"json`, true},
	} {
		if got := doorShaped([]byte(tt.partial)); got != tt.door {
			t.Errorf("doorShaped(%q) = %v, want %v", tt.partial, got, tt.door)
		}
	}
}
