package a2av03_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
)

// The fuzz targets are seeded with every example in testdata/spec and
// testdata/schema (requests by method and params, results by value).

var fuzzMethods = []string{
	a2av03.MethodSendMessage, a2av03.MethodStreamMessage, a2av03.MethodGetTask, a2av03.MethodCancelTask,
	a2av03.MethodResubscribe, a2av03.MethodSetPushConfig, a2av03.MethodGetPushConfig, a2av03.MethodListPushConfigs,
	a2av03.MethodDeletePushConfig, a2av03.MethodGetAuthenticatedExtendedCard,
}

// examples returns the JSON-RPC envelopes in testdata, split into calls
// (method, params) and results.
func examples(f *testing.F) (calls []*a2a.Request, results []json.RawMessage) {
	files, _ := filepath.Glob("testdata/s[cp][he]*/*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if req, e := a2a.DecodeRequest(data); e == nil {
			calls = append(calls, req)
			continue
		}
		if resp, err := a2a.DecodeResponse(data); err == nil && resp.Result != nil {
			results = append(results, resp.Result)
			continue
		}
		results = append(results, data)
	}
	return calls, results
}

// canonical is v's JSON read back as generic values, to compare two
// values whose raw JSON members may differ in spacing.
func canonical(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzDecodeRequest: any params of any 0.3 method either decode to a v1
// request or fail with -32602, never panic; a decoded request written
// back as 0.3 (EncodeRequest) decodes to the same v1 request.
func FuzzDecodeRequest(f *testing.F) {
	calls, _ := examples(f)
	for _, c := range calls {
		for i, m := range fuzzMethods {
			if m == c.Method {
				f.Add(uint8(i), []byte(c.Params))
			}
		}
	}
	f.Add(uint8(0), []byte(`{"message":{"messageId":"m","role":"user","parts":[{"kind":"data","data":{"value":1},"metadata":{"data_part_compat":true}}]}}`))
	f.Fuzz(func(t *testing.T, which uint8, params []byte) {
		method := fuzzMethods[int(which)%len(fuzzMethods)]
		v1Method, req, e := a2av03.DecodeRequest(method, params)
		if e != nil {
			if e.Code != a2a.CodeInvalidParams {
				t.Fatalf("code %d for %s", e.Code, method)
			}
			return
		}
		m, p, err := a2av03.EncodeRequest(v1Method, req)
		if err != nil || m != method {
			t.Fatalf("EncodeRequest(%s) = %s, %v", v1Method, m, err)
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal params: %v", err)
		}
		_, req2, e := a2av03.DecodeRequest(method, again)
		if e != nil {
			t.Fatalf("params written back do not decode: %v\n%s", e, again)
		}
		if a, b := canonical(t, req), canonical(t, req2); !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed the request:\n%v\n%v", a, b)
		}
	})
}

// FuzzEvent: a 0.3 event either fails to decode or convert, or survives
// v1 and back to the same v1 frame.
func FuzzEvent(f *testing.F) {
	_, results := examples(f)
	for _, r := range results {
		f.Add([]byte(r))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev a2av03.Event
		if a2av03.Unmarshal(data, &ev) != nil {
			return
		}
		frame, err := ev.V1()
		if err != nil {
			return
		}
		back, err := a2av03.EncodeResult(frame)
		if err != nil {
			t.Fatalf("EncodeResult: %v", err)
		}
		frame2, err := a2av03.DecodeResult(a2a.MethodSendStreamingMessage, back)
		if err != nil {
			t.Fatalf("own output does not decode: %v\n%s", err, back)
		}
		if a, b := canonical(t, frame), canonical(t, frame2); !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed the frame:\n%v\n%v", a, b)
		}
	})
}

// FuzzParseCard: any card either fails to parse or yields a v1 card whose
// 0.3 and hybrid forms are written and read back.
func FuzzParseCard(f *testing.F) {
	data, err := os.ReadFile("testdata/spec/card-sample.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"name":"n","supportedInterfaces":[{"url":"u","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		card, err := a2av03.ParseCard(data)
		if err != nil {
			return
		}
		hybrid, err := a2av03.HybridCard(card)
		if err != nil {
			return // no JSON-RPC interface
		}
		if _, err := a2av03.ParseCard(hybrid); err != nil {
			t.Fatalf("hybrid card does not parse: %v\n%s", err, hybrid)
		}
		var c03 a2av03.AgentCard
		if err := a2av03.Unmarshal(hybrid, &c03); err != nil {
			t.Fatalf("hybrid card is not a 0.3 card: %v\n%s", err, hybrid)
		}
	})
}
