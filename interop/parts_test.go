package interop

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
)

// Every kind of part, in every direction: a client sends a message whose
// first part is the text "parts"; the agent (ours, a2a-go's or a2a-js's)
// returns the other parts verbatim as an artifact. The round trip crosses
// the client's encoder, the server's decoder and encoder, and the client's
// decoder.

const partsCommand = "parts"

// sampleParts is the wire form of the parts sent; every test compares what
// comes back with its decoding by our model.
const sampleParts = `[
	{"text": "hello, wörld", "metadata": {"lang": "en", "n": 1}},
	{"raw": "AAEC/w==", "filename": "b.bin", "mediaType": "application/octet-stream"},
	{"url": "https://example.com/a.txt", "filename": "a.txt", "mediaType": "text/plain"},
	{"data": {"k": [1, 2.5, "x"], "nested": {"ok": true}}, "mediaType": "application/json"},
	{"data": ["list", 3]},
	{"data": "just a string"}
]`

func wantParts(t *testing.T) []a2a.Part {
	t.Helper()
	var ps []a2a.Part
	if err := a2a.Unmarshal([]byte(sampleParts), &ps); err != nil {
		t.Fatalf("decode sample parts: %v", err)
	}
	return ps
}

// partsMessage is the "parts" command followed by the sample parts.
func partsMessage(t *testing.T) *a2a.Message {
	return a2a.NewMessage(a2a.RoleUser, append([]a2a.Part{a2a.TextPart(partsCommand)}, wantParts(t)...)...)
}

// samePart compares data parts by JSON value, not by bytes, since peers
// may re-encode numbers or reorder keys.
var samePart = cmp.Comparer(func(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return cmp.Equal(va, vb)
})

func checkParts(t *testing.T, got []a2a.Part) {
	t.Helper()
	if diff := cmp.Diff(wantParts(t), got, samePart); diff != "" {
		t.Errorf("parts after the round trip (-want +got):\n%s", diff)
	}
}

// The a2a-go client encodes parts with its own model (built here by
// decoding the sample with a2a-go's decoder) and decodes our answer; the
// result is read back through our model for the comparison.
// Over gRPC a2a-go's client cannot send the sample (D17), so it runs over
// the HTTP bindings here and TestParts_GoClientGRPC_Deviation pins that.
func TestParts_GoClient(t *testing.T) {
	eachGoBindingOf(t, goBindings[:2], func(t *testing.T, c *a2aclient.Client) {
		var goParts []*goa2a.Part
		if err := json.Unmarshal([]byte(sampleParts), &goParts); err != nil {
			t.Fatalf("a2a-go decodes the sample: %v", err)
		}
		msg := goa2a.NewMessage(goa2a.MessageRoleUser, append([]*goa2a.Part{goa2a.NewTextPart(partsCommand)}, goParts...)...)
		task := goSendTask(t, c, &goa2a.SendMessageRequest{Message: msg})
		if len(task.Artifacts) != 1 {
			t.Fatalf("artifacts = %+v", task.Artifacts)
		}
		enc, err := json.Marshal(task.Artifacts[0].Parts)
		if err != nil {
			t.Fatal(err)
		}
		var got []a2a.Part
		if err := a2a.Unmarshal(enc, &got); err != nil {
			t.Fatalf("decode %s: %v", enc, err)
		}
		checkParts(t, got)
		if raw := task.Artifacts[0].Parts[1].Raw(); !bytes.Equal(raw, []byte{0, 1, 2, 255}) {
			t.Errorf("a2a-go sees raw bytes %v", raw)
		}
	})
}

// D17: a2a-go v2.3.1's gRPC client converts a data part only when its
// value is a JSON object ("DataPart value must be a map"), though the proto
// carries any google.protobuf.Value; an object data part goes through.
func TestParts_GoClientGRPC_Deviation(t *testing.T) {
	eachGoBindingOf(t, []goa2a.TransportProtocol{goa2a.TransportProtocolGRPC}, func(t *testing.T, c *a2aclient.Client) {
		array := goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.NewTextPart(partsCommand), goa2a.NewDataPart([]any{1, 2}))
		if _, err := c.SendMessage(testCtx(t), &goa2a.SendMessageRequest{Message: array}); err == nil || !strings.Contains(err.Error(), "must be a map") {
			t.Fatalf("array data over a2a-go's gRPC client: %v, want its conversion error", err)
		}
		object := goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.NewTextPart(partsCommand), goa2a.NewDataPart(map[string]any{"k": "v"}))
		task := goSendTask(t, c, &goa2a.SendMessageRequest{Message: object})
		if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 {
			t.Fatalf("artifacts = %+v", task.Artifacts)
		}
	})
}

func TestParts_GoServer(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	res := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: partsMessage(t)}))
	if res.Task == nil || len(res.Task.Artifacts) != 1 {
		t.Fatalf("result = %+v", res)
	}
	checkParts(t, res.Task.Artifacts[0].Parts)
}

func TestParts_JSServer(t *testing.T) {
	c := newRawClient(startJSPeer(t))
	res := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: partsMessage(t)}))
	if res.Task == nil || len(res.Task.Artifacts) != 1 {
		t.Fatalf("result = %+v", res)
	}
	checkParts(t, res.Task.Artifacts[0].Parts)
}

// The a2a-js client builds the parts from the same wire JSON with its
// fromJSON codec (js/client.mjs, step sendParts).
func TestParts_JSClient(t *testing.T) {
	rep := runJSClient(t, startOurServer(t).URL, sampleParts)
	res := jsResult[a2a.SendMessageResponse](t, rep.step(t, "sendParts"))
	if res.Task == nil || len(res.Task.Artifacts) != 1 {
		t.Fatalf("result = %+v", res)
	}
	checkParts(t, res.Task.Artifacts[0].Parts)
}

// A data part holding JSON null is valid ProtoJSON (google.protobuf.Value's
// null), and our server returns it as sent. The peers do not:
//
// Deviation: a2a-go refuses the whole request with -32700 ("unknown part
// content type"); a2a-js keeps the part but drops its content and sends
// back {} (its client does the same when sending), which is no part at all.
func TestParts_DataNull(t *testing.T) {
	msg := map[string]any{"message": map[string]any{
		"messageId": a2a.NewID(), "role": "ROLE_USER",
		"parts": []any{map[string]any{"text": partsCommand}, map[string]any{"data": nil}},
	}}
	artifactParts := func(t *testing.T, body []byte) string {
		var r struct {
			Result struct {
				Task struct {
					Artifacts []struct {
						Parts json.RawMessage `json:"parts"`
					} `json:"artifacts"`
				} `json:"task"`
			} `json:"result"`
		}
		if err := json.Unmarshal(body, &r); err != nil || len(r.Result.Task.Artifacts) != 1 {
			t.Fatalf("no artifact in %s (%v)", body, err)
		}
		return string(r.Result.Task.Artifacts[0].Parts)
	}

	t.Run("novaos", func(t *testing.T) {
		body, _ := newRawClient(startOurServer(t).URL).callRaw(t, a2a.MethodSendMessage, msg)
		if got := artifactParts(t, body); got != `[{"data":null}]` {
			t.Errorf("parts %s, want the null data part back", got)
		}
	})
	t.Run("a2a-go", func(t *testing.T) {
		wantError(t, newRawClient(startGoPeer(t).URL).call(t, a2a.MethodSendMessage, msg), a2a.CodeParseError)
	})
	t.Run("a2a-js", func(t *testing.T) {
		body, _ := newRawClient(startJSPeer(t)).callRaw(t, a2a.MethodSendMessage, msg)
		if got := artifactParts(t, body); got != `[{}]` {
			t.Errorf("parts %s; the peer used to send back an empty part", got)
		}
	})
}
