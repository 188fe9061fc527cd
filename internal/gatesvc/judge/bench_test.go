package judge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/secret"
)

// benchVerdict is the pass the fake model answers.
const benchVerdict = `{"verdict":"pass","rule_id_cited":"","rule_ids":["threats"],"rationale":"No rule is violated by this refund.","signals":["the amount is within policy"]}`

// benchJudgeRequest is a refund of `novaos bench gate` put to the judge
// with the bench rule set's 21 rules.
func benchJudgeRequest(b *testing.B) Request {
	var doc struct {
		Rules []Rule `json:"rules"`
	}
	if err := json.Unmarshal([]byte(bench.GateRuleSet), &doc); err != nil {
		b.Fatal(err)
	}
	return Request{
		Action:    `{"action_type":"refund","context_type":"cs","context":{"customer_id":"c-42","amount":331,"currency":"EUR"}}`,
		Reasoning: "the customer was charged twice for one order",
		Evidence:  []Evidence{{Source: "lookup_customer #1", Content: `{"tier":"gold","orders":12}`}},
		Rules:     doc.Rules,
	}
}

// BenchmarkJudgePath is what the gate spends on a judgement besides the
// model's own time, against an in-process fake model that answers at
// once: request builds the prompt and the response format, decode checks
// the verdict strictly, and roundtrip is the whole Judge call (both, the
// HTTP round trip on loopback and the envelope's decoding). The fake's
// own cost, reading the request and writing a fixed answer, is in
// roundtrip too.
func BenchmarkJudgePath(b *testing.B) {
	req := benchJudgeRequest(b)
	ids := make([]string, len(req.Rules))
	for i, r := range req.Rules {
		ids[i] = r.ID
	}
	answer, err := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
		"message": map[string]any{"role": "assistant", "content": benchVerdict}}}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	defer srv.Close()
	j := New(srv.URL+"/v1", "fake-judge", secret.New("fake-key"), nil)

	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := j.messages(req); err != nil {
				b.Fatal(err)
			}
			_ = responseFormat(ids)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode([]byte(benchVerdict), ids); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("roundtrip", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			v, err := j.Judge(ctx, req)
			if err != nil || v.Verdict != "pass" {
				b.Fatalf("%+v, %v", v, err)
			}
		}
	})
}
