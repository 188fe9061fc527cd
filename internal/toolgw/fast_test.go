package toolgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/tools"
)

// twin is two gateways over the same demo provider: one answers what it
// can on the fast path, the other leaves every request to the SDK.
type twin struct {
	fast, sdk       *harness
	fastTok, sdkTok string
}

func newTwin(t testing.TB) *twin {
	tw := &twin{fast: newHarnessWith(t, nil), sdk: newHarnessWith(t, nil)}
	tw.sdk.svc.sdkOnly = true
	claims := identity.Claims{TenantID: "acme", AgentID: "bot", UserID: "u1", Scopes: []string{"mcp:tools:*"}}
	tw.fastTok, tw.sdkTok = tw.fast.tokenFor(claims), tw.sdk.tokenFor(claims)
	return tw
}

// answer is what a request got, as compared: the status, the headers
// either path sets, and the body with call ids, which are random, made
// alike.
type answer struct {
	status  int
	headers string
	body    string
}

var (
	callIDs       = regexp.MustCompile(`call_[a-z0-9]{26}`)
	comparedHeads = []string{"Content-Type", "Cache-Control", "Www-Authenticate", "Allow", "Connection", "X-Content-Type-Options"}
)

func (h *harness) post(tok, body string, header http.Header) (answer, error) {
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+tools.Path, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	var hs []string
	for _, k := range comparedHeads {
		hs = append(hs, k+"="+strings.Join(resp.Header.Values(k), "|"))
	}
	if resp.Header.Get(tools.SessionHeader) != "" {
		hs = append(hs, "session")
	}
	return answer{status: resp.StatusCode, headers: strings.Join(hs, "; "), body: callIDs.ReplaceAllString(string(b), "call_*")}, nil
}

// compare sends the request to both gateways and fails t unless they
// answer alike; it reports whether the fast path answered.
func (tw *twin) compare(t testing.TB, body string, header http.Header) bool {
	t.Helper()
	before := tw.fast.svc.fastServed.Load()
	got, err := tw.fast.post(tw.fastTok, body, header)
	if err != nil {
		t.Fatal(err)
	}
	fast := tw.fast.svc.fastServed.Load() > before
	want, err := tw.sdk.post(tw.sdkTok, body, header)
	if err != nil {
		t.Fatal(err)
	}
	if tw.sdk.svc.fastServed.Load() != 0 {
		t.Fatal("the SDK-only gateway took the fast path")
	}
	if got != want {
		t.Errorf("request %q %v (fast path: %v):\n got  %d %s\n      %s\n want %d %s\n      %s",
			body, header, fast, got.status, got.headers, got.body, want.status, want.headers, want.body)
	}
	return fast
}

const (
	modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	echoArgs   = `"arguments":{"text":"<b>&amp; é ✓</b>"}`
)

func legacy() http.Header {
	return http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
}

func modern(method, name string) http.Header {
	h := legacy()
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	return h
}

func with(h http.Header, kv ...string) http.Header {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			h.Del(kv[i])
		} else {
			h.Set(kv[i], kv[i+1])
		}
	}
	return h
}

func call(id, params string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + params + `}}`
}

// The fast path answers as the SDK would, byte for byte, in both eras:
// results, tool and protocol errors, ids of every kind; and leaves to the
// SDK what the SDK would refuse or read otherwise.
func TestFastPathAnswersAsTheSDK(t *testing.T) {
	tw := newTwin(t)
	echo := `"name":"novaos.demo.echo",` + echoArgs
	deep := strings.Repeat(`[`, 950) + strings.Repeat(`]`, 950)
	deeper := strings.Repeat(`[`, 1001) + strings.Repeat(`]`, 1001)
	for _, tc := range []struct {
		name   string
		body   string
		header http.Header
		fast   bool
	}{
		{"a call", call("1", echo), legacy(), true},
		{"a string id", call(`"req-7"`, echo), legacy(), true},
		{"id zero", call("0", echo), legacy(), true},
		{"a negative id", call("-42", echo), legacy(), true},
		{"a long id", call("123456789012345", echo), legacy(), true},
		{"a fractional id", call("1.5", echo), legacy(), false},
		{"an exponent id", call("1e3", echo), legacy(), false},
		{"an id of 16 digits", call("1234567890123456", echo), legacy(), false},
		{"an escaped id", call(`"a\u0062"`, echo), legacy(), false},
		{"a null id", call("null", echo), legacy(), false},
		{"a boolean id", call("true", echo), legacy(), false},
		{"no id", `{"jsonrpc":"2.0","method":"tools/call","params":{` + echo + `}}`, legacy(), false},
		{"another version tag", `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{` + echo + `}}`, legacy(), false},
		{"no version tag", `{"id":1,"method":"tools/call","params":{` + echo + `}}`, legacy(), false},
		{"a member the SDK reads otherwise", `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{` + echo + `}}`, legacy(), false},
		{"a member neither reads", `{"jsonrpc":"2.0","id":1,"method":"tools/call","x":1,"params":{` + echo + `}}`, legacy(), false},
		{"input responses", call("1", echo+`,"inputResponses":{}`), legacy(), false},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, legacy(), false},
		{"null params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`, legacy(), false},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`, legacy(), false},
		{"an unknown tool", call("2", `"name":"novaos.demo.nope","arguments":{}`), legacy(), true},
		{"not a tool name", call("2", `"name":"rm -rf","arguments":{}`), legacy(), true},
		{"arguments failing the schema", call("3", `"name":"novaos.demo.get_item","arguments":{"id":7}`), legacy(), true},
		{"arguments not an object", call("3", `"name":"novaos.demo.get_item","arguments":[1]`), legacy(), true},
		{"null arguments", call("3", `"name":"novaos.demo.echo","arguments":null`), legacy(), true},
		{"no arguments", call("3", `"name":"novaos.demo.echo"`), legacy(), true},
		{"arguments deep", call("3", `"name":"novaos.demo.echo","arguments":{"a":`+deep+`}`), legacy(), false},
		{"arguments too deep", call("3", `"name":"novaos.demo.echo","arguments":{"a":`+deeper+`}`), legacy(), false},
		{"a structured result", call("4", `"name":"novaos.demo.get_item","arguments":{"id":"42"}`), legacy(), true},
		{"a write the gate passes", call("5", `"name":"novaos.demo.create_item","arguments":{"name":"x","amount":12.5}`), legacy(), true},
		{"a call id of the client's", call("6", `"_meta":{"novaos.dev/call_id":"client-1"},"name":"novaos.demo.echo","arguments":{}`), legacy(), true},
		{"a charset", call("1", echo), with(legacy(), "Content-Type", "application/json; charset=utf-8"), true},
		{"no content type", call("1", echo), with(legacy(), "Content-Type", ""), true},
		{"another content type", call("1", echo), with(legacy(), "Content-Type", "text/plain"), false},
		{"a malformed content type", call("1", echo), with(legacy(), "Content-Type", "application/json;;"), false},
		{"JSON only accepted", call("1", echo), with(legacy(), "Accept", "application/json"), true},
		{"anything accepted", call("1", echo), with(legacy(), "Accept", "*/*"), true},
		{"an event stream only accepted", call("1", echo), with(legacy(), "Accept", "text/event-stream"), false},
		{"a last event id", call("1", echo), with(legacy(), "Last-Event-ID", "x_1"), false},
		{"a session-era revision", call("1", echo), with(legacy(), "Mcp-Protocol-Version", "2025-06-18"), true},
		{"an unknown old revision", call("1", echo), with(legacy(), "Mcp-Protocol-Version", "2020-01-01"), false},
		{"an unknown new revision", call("1", echo), with(legacy(), "Mcp-Protocol-Version", "2030-01-01"), false},
		{"the stateless era", call("7", modernMeta+","+echo), modern("tools/call", "novaos.demo.echo"), true},
		{"the stateless era, a string id", call(`"x"`, modernMeta+","+echo), modern("tools/call", "novaos.demo.echo"), true},
		{"the stateless era, an unknown tool", call("8", modernMeta+`,"name":"novaos.demo.nope","arguments":{}`), modern("tools/call", "novaos.demo.nope"), true},
		{"the stateless era, bad arguments", call("8", modernMeta+`,"name":"novaos.demo.get_item","arguments":{"id":1}`), modern("tools/call", "novaos.demo.get_item"), true},
		{"the stateless era, a write", call("9", modernMeta+`,"name":"novaos.demo.create_item","arguments":{"name":"y"}`), modern("tools/call", "novaos.demo.create_item"), true},
		{"the stateless era, no method header", call("7", modernMeta+","+echo), with(modern("tools/call", "novaos.demo.echo"), "Mcp-Method", ""), false},
		{"the stateless era, another method header", call("7", modernMeta+","+echo), modern("tools/list", "novaos.demo.echo"), false},
		{"the stateless era, no name header", call("7", modernMeta+","+echo), modern("tools/call", ""), false},
		{"the stateless era, another name header", call("7", modernMeta+","+echo), modern("tools/call", "novaos.demo.get_item"), false},
		{"the stateless era, no revision in _meta", call("7", echo), modern("tools/call", "novaos.demo.echo"), false},
		{"the stateless era in _meta only", call("7", modernMeta+","+echo), legacy(), false},
		{"the stateless era, an old revision in _meta", call("7", strings.Replace(modernMeta, "2026-07-28", "2025-11-25", 1)+","+echo),
			modern("tools/call", "novaos.demo.echo"), false},
		{"the stateless era, no capabilities", call("7", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},`+echo),
			modern("tools/call", "novaos.demo.echo"), false},
		{"the stateless era, capabilities the SDK cannot read", call("7", strings.Replace(modernMeta, `clientCapabilities":{}`, `clientCapabilities":{"roots":5}`, 1)+","+echo),
			modern("tools/call", "novaos.demo.echo"), false},
		{"the stateless era, null client info", call("7", strings.Replace(modernMeta, `{"name":"t","version":"1"}`, `null`, 1)+","+echo),
			modern("tools/call", "novaos.demo.echo"), false},
		{"the stateless era, no client info", call("7", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}},`+echo),
			modern("tools/call", "novaos.demo.echo"), true},
		{"a listing", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, legacy(), true},
		{"a listing with params", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"query":"ITEM"}}`, legacy(), true},
		{"a listing with null params", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}`, legacy(), true},
		{"a listing with a cursor", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"x"}}`, legacy(), false},
		{"a listing in the stateless era", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`, modern("tools/list", ""), true},
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, legacy(), false},
		{"ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, with(legacy(), "Mcp-Protocol-Version", "2025-11-25"), false},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, legacy(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fast := tw.compare(t, tc.body, tc.header); fast != tc.fast {
				t.Errorf("fast path taken: %v, want %v", fast, tc.fast)
			}
		})
	}
}

// A write the gate holds, and a call the provider fails, are answered
// alike too.
func TestFastPathRefusalsAsTheSDK(t *testing.T) {
	tw := newTwin(t)
	write := call("1", `"name":"novaos.demo.create_item","arguments":{"name":"x"}`)
	for _, h := range []*harness{tw.fast, tw.sdk} {
		h.gate.verdict = gate.Verdict{Verdict: gate.Hold, RuleIDCited: "floor"}
	}
	if !tw.compare(t, write, legacy()) {
		t.Error("the fast path did not answer the held write")
	}
	for _, h := range []*harness{tw.fast, tw.sdk} {
		h.gate.verdict = gate.Verdict{Verdict: gate.Pass}
		h.demo.fail = Failf(tools.ReasonUnavailable, "the backend is down")
	}
	if !tw.compare(t, call("2", `"name":"novaos.demo.echo","arguments":{}`), modern("tools/call", "novaos.demo.echo")) {
		// The stateless era is told by _meta; without it, this is left to the SDK.
		t.Log("left to the SDK")
	}
	if !tw.compare(t, call("2", modernMeta+`,"name":"novaos.demo.echo","arguments":{}`), modern("tools/call", "novaos.demo.echo")) {
		t.Error("the fast path did not answer the failed call")
	}
	h := tw.fast
	if n := h.demo.count("novaos.demo.create_item"); n != 0 {
		t.Errorf("the held write ran %d times", n)
	}
}

// FuzzFastPath sends arbitrary bodies, with headers of either era drawn
// from flags, to both gateways: the fast path must answer every request
// it takes as the SDK does.
func FuzzFastPath(f *testing.F) {
	tw := newTwin(f)
	for _, s := range []string{
		call("1", `"name":"novaos.demo.echo","arguments":{"text":"x"}`),
		call(`"a"`, modernMeta+`,"name":"novaos.demo.get_item","arguments":{"id":"1"}`),
		call("-3", `"name":"novaos.demo.get_item","arguments":{"id":3}`),
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"query":"echo"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{` + modernMeta + `}}`,
		call("1", `"name":"novaos.demo.create_item","arguments":{"name":"n"}`),
	} {
		for _, flags := range []byte{0, 1, 7, 15} {
			f.Add([]byte(s), flags)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, flags byte) {
		if len(body) > 64<<10 {
			return
		}
		h := legacy()
		var loose struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &loose)
		if flags&1 != 0 {
			h.Set("Mcp-Protocol-Version", "2026-07-28")
		}
		if flags&2 != 0 {
			h.Set("Mcp-Method", loose.Method)
		}
		if flags&4 != 0 && printable(loose.Params.Name) {
			h.Set("Mcp-Name", loose.Params.Name)
		}
		if flags&8 != 0 {
			h.Set("Accept", "application/json")
		}
		if flags&16 != 0 {
			h.Set("Content-Type", "application/json; charset=utf-8")
		}
		if flags&32 != 0 {
			h.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		if !utf8Header(h) {
			return
		}
		tw.compare(t, string(body), h)
	})
}

// utf8Header reports whether every header value can be sent.
func utf8Header(h http.Header) bool {
	for _, vs := range h {
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x00") || !bytes.Equal([]byte(v), bytes.TrimSpace([]byte(v))) {
				return false
			}
		}
	}
	return true
}

var _ = errors.New
