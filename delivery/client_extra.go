package delivery

// Query parameters of pollAgentEvents (ConsumerEventsPath).
const (
	// PollLimitParam bounds the events of one page: 1 to MaxPage, the
	// platform's own default when absent.
	PollLimitParam = "limit"
	// PollWaitParam is how long, in whole seconds, the platform may hold
	// a page that would be empty open for an event to arrive (long
	// polling); the platform cuts it to its own bound. Absent or 0
	// answers at once.
	PollWaitParam = "wait"
)

// Headers of the API besides InvocationTokenHeader.
const (
	// IdempotencyKeyHeader makes a POST or PATCH repeatable: the platform
	// answers a repeated key with the first answer, and the key of a
	// request still being answered with request_in_progress.
	IdempotencyKeyHeader = "Idempotency-Key"
	// DeprecationHeader and SunsetHeader (RFC 9745, RFC 8594) mark an
	// operation that will go away, and when.
	DeprecationHeader = "Deprecation"
	SunsetHeader      = "Sunset"
)
