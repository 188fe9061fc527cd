// Package worldstate is the worldstate-delta-v1 extension: the changes a run
// made to shared state.
//
// The changes, a list of deltas, are carried in the metadata of the task's
// terminal artifact under the extension URI.
//
//	md := worldstate.Metadata(worldstate.Payload{Deltas: []worldstate.Delta{
//		{Domain: "board", Path: "data.backlog", Op: worldstate.OpInc, Value: 1},
//	}})
//	// md == {"https://proto-labs.ai/a2a/ext/worldstate-delta-v1": {"deltas":[{"domain":"board","path":"data.backlog","op":"inc","value":1}]}}
//	p, ok, err := worldstate.Parse(artifact.Metadata)
//
// The wire shape is {deltas:[{domain, path, op, value}]}. Every delta names
// a non-empty domain and path; op is "set" (replace the value at path),
// "inc" (add value, which must be a number) or "push" (append value to the
// list at path); value is always present, null included. An agent built
// with package agent emits this extension when a skill calls
// Context.ReportWorldstate.
package worldstate
