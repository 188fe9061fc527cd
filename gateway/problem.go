package gateway

// Problem type URIs of the gateway's API (RFC 9457 "type"). They are
// stable: clients may branch on them. Those every service answers
// (malformed JSON, unauthorized, forbidden, …) are package problem's.
const (
	ProblemInvalidRequest   = "https://novaos.dev/problems/invalid-request"    // 400, a field breaks a rule
	ProblemInvalidCursor    = "https://novaos.dev/problems/invalid-event-id"   // 400, a Last-Event-ID or cursor the run never issued
	ProblemRunNotFound      = "https://novaos.dev/problems/run-not-found"      // 404
	ProblemInstanceNotFound = "https://novaos.dev/problems/instance-not-found" // 404
	ProblemInstanceExists   = "https://novaos.dev/problems/instance-exists"    // 409, the name is taken in the tenant
	ProblemVersionConflict  = "https://novaos.dev/problems/version-conflict"   // 409, changed meanwhile
	ProblemRunNotWaiting    = "https://novaos.dev/problems/run-not-waiting"    // 409, a reply to a run that waits for none
	ProblemRunEnded         = "https://novaos.dev/problems/run-ended"          // 409, a cancel or debug action on an ended run
	ProblemRunNotPaused     = "https://novaos.dev/problems/run-not-paused"     // 409, a debugger step on a run it does not hold
	ProblemAgentUnreachable = "https://novaos.dev/problems/agent-unreachable"  // 502, an install whose card cannot be fetched
)
