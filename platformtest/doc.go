// Package platformtest runs a fake platform in process, for testing pull-delivery adapters.
//
// A FakeServer serves the platform's delivery API (discovery, keys, the
// WebSocket gateway, polling, runs) on 127.0.0.1 at a free port, with the
// platform's own delivery service behind it on in-memory stores and a
// FakeClock for its time. A test triggers runs, forges tokens, cancels,
// rewinds consumers and injects faults (Fault: a request stored and then
// answered 502, stored late, rate limited, or dropped), and reads what
// the platform saw (RunState, ConsumerState). The scenario functions run
// the same checks against any ScenarioServer: this fake, or a real
// platform.
//
//	fake := platformtest.NewFakeServer(t, nil)
//	a, _ := adapter.New(fake.Config(t, "alpha"), handler, &adapter.Options{Clock: fake.Clock()})
//	go a.Run(ctx)
//	run := fake.Trigger(t, "hello")
//	fake.WaitRun(t, run.RunID, delivery.RunCompleted)
package platformtest
