// Package judge is the governance gate's optional LLM judge of gated writes.
//
// It asks an OpenAI-compatible chat-completions endpoint (through
// internal/modelapi) whether a gated write breaks one of the tenant's
// plain-English rules, and decodes the answer strictly. It runs after the
// deterministic rules (package rules) and may escalate their verdict, never
// lower it (Most).
//
// The verdict is one JSON object, the only thing the model may answer:
//
//	{
//	  "verdict":       "pass" | "hold" | "kill",     required
//	  "rule_id_cited": "<rule id>",                  required for hold and kill; empty or absent for pass
//	  "rule_ids":      ["<rule id>", …],             optional: every rule found relevant
//	  "rationale":     "<text>",                     required, non-blank, ≤ 4 KiB
//	  "signals":       ["<fact>", …]                 optional: the evidence it rests on
//	}
//
// verdict, rule_id_cited and rationale are what the gate SDKs' clients get
// back on a kill or pause (verdict, rule_id_cited, rationale). Decode
// rejects, with a *DecodeError naming the reason and the JSON path, and
// quoting at most EchoBytes of the output: a duplicate key at any depth
// (encoding/json would keep the last, turning "kill … pass" into a pass),
// an unknown field (names are case-sensitive), data after the object,
// a verdict outside the enum, a cited or listed rule id the judge was not
// shown, a wrong type (null included), a missing required field, and
// oversize or over-nested input. A Markdown code fence is prose, not JSON.
//
// Judge.Judge puts the rules' ids and text in the system message, and the
// action, the agent's reasoning and the evidence in the user message as a
// JSON data block framed as data, not instructions (evidence is where
// injected text lives); each evidence item is cut at a size limit with a
// marker. It asks for the verdict through a strict json_schema
// response_format with temperature 0. Every failure is an *Error whose
// Failure the caller reports and treats as fail-closed:
// judge_unavailable (timeout, transport, any HTTP error), judge_malformed
// (bad envelope or verdict) and judge_refused (a refusal, or a
// finish_reason other than "stop").
//
//	j := judge.New("http://127.0.0.1:8000/v1", "qwen3", key, nil)
//	v, err := j.Judge(ctx, judge.Request{Action: actionJSON, Reasoning: why, Evidence: reads, Rules: rules})
//	if err != nil { /* kill with [fail_closed_<Failure>] */ }
//	final := judge.Most(deterministic, v.Verdict)
package judge
