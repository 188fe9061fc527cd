// Package confidence is the confidence-v1 extension: an agent's estimate
// that its answer is right.
//
// The estimate, from 0 to 1, comes with an optional explanation and is
// carried in the metadata of the task's terminal artifact under the
// extension URI.
//
//	md := confidence.Metadata(confidence.Payload{Confidence: 0.92, Explanation: "high coverage"})
//	// md == {"https://proto-labs.ai/a2a/ext/confidence-v1": {"confidence":0.92,"explanation":"high coverage"}}
//	p, ok, err := confidence.Parse(artifact.Metadata)
//
// The wire shape is {confidence, explanation?, success?}. Confidence must
// be a number in [0, 1]: a value outside it is an error, not clamped, so a
// consumer never acts on a number the agent did not mean. An agent built
// with package agent emits this extension when a skill calls
// Context.ReportConfidence.
package confidence
