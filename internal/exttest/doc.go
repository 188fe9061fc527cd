// Package exttest is the table-test harness of the metadata extension
// packages.
//
// The extension packages (ext/cost, ext/confidence, ext/worldstate,
// ext/toolcall) share its parse cases, a round trip over the wire and golden
// fragments.
//
//	exttest.RunParse(t, cost.Parse, []exttest.Case[cost.Payload]{
//		{Name: "absent", MD: map[string]any{"other": 1}},
//		{Name: "wrong type", MD: map[string]any{cost.URI: "x"}, WantOK: true, WantErr: true},
//	})
package exttest
