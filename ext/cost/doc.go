// Package cost is the cost-v1 extension: the tokens, time and money one run
// spent.
//
// Token usage, wall time and money spent by one run are carried in the
// metadata of the task's terminal artifact under the extension URI.
//
//	md := cost.Metadata(cost.Payload{
//		Usage:      cost.Usage{InputTokens: 1500, OutputTokens: 420},
//		DurationMs: new(int64(900)),
//		CostUSD:    new(0.01),
//		Success:    new(true),
//	})
//	// md == {"https://proto-labs.ai/a2a/ext/cost-v1": {"usage":{"input_tokens":1500,"output_tokens":420},"durationMs":900,"costUsd":0.01,"success":true}}
//	p, ok, err := cost.Parse(artifact.Metadata)
//
// The wire shape is {usage:{input_tokens, output_tokens,
// cache_creation_input_tokens?, cache_read_input_tokens?}, durationMs?,
// costUsd?, success?}. Token counts and durationMs are non-negative
// integers, costUsd a non-negative number; optional fields are pointers so
// that an explicit 0 or false survives. Unknown fields are ignored when
// parsing. An agent built with package agent emits this extension when a
// skill calls Context.ReportCost.
package cost
