// Package bridge connects an agent process in any language to an adapter.
//
// A Handler passes each run of the adapter to the agent as one JSON
// object (a Request: the run, its context as the platform gave it, and
// that context rendered for a model with trust marks) and acts on the
// agent's answers (Reply lines: status, message, await_input, finish,
// error), one JSON object per line. Two transports:
//
//   - Process: the agent is a long-running program; requests go to its
//     standard input, one line each, and its answers come from its
//     standard output, each naming its run. A run the platform cancels
//     is told with a cancel line. A program that exits is started again
//     for the next run, after a backoff that grows while it keeps exiting
//     soon after its start; the runs it held fail. Close stops it (its
//     standard input closes: the program's sign to exit).
//   - HTTP: each request is POSTed to a local URL; the answer is the
//     reply lines (application/x-ndjson, or a JSON array of them). A
//     cancel aborts the request.
//
// A turn that ends without finish or await_input completes the run.
//
//	h, _ := bridge.NewHTTP("http://127.0.0.1:9000/run", nil)
//	a, _ := adapter.New(cfg, h, nil)
//	a.Run(ctx)
package bridge
