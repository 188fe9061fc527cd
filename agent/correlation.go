package agent

import "novaos.dev/novaos/identity"

// CorrelationHeaders returns the X-NovaOS-* headers of the execution
// (Execution().ContextHeaders()) without the token: the ids a service
// client sends so the platform can correlate its calls with the run. Safe
// to log; the token travels as Authorization only.
func (c *Context) CorrelationHeaders() map[string]string {
	h := c.Execution().ContextHeaders()
	delete(h, identity.HeaderExecutionToken)
	return h
}
