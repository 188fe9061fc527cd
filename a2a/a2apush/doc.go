// Package a2apush delivers A2A push notifications from a task store's outbox
// to webhooks.
//
// It drains the outbox a task store fills in the transaction of every task
// write (a2asrv.PushOutbox) and POSTs each notification, a StreamResponse,
// to its config's webhook.
//
//	tasks := a2asrv.NewMemoryTaskStore(nil) // or a store/sqlite, store/postgres DB:
//	push := tasks.PushConfigStore()         // db.PushConfigStore(),
//	outbox := tasks.PushOutbox()            // db.PushOutbox()
//	d, err := a2apush.New(outbox, &a2apush.Options{Signer: issuer, Issuer: baseURL})
//	go d.Run(ctx) // until ctx ends
//	h := a2asrv.NewHandler(card, exec, &a2asrv.Options{TaskStore: tasks, PushConfigStore: push})
//
// # Delivery
//
// At least once, in order per config: a config's notifications form a
// stream, and only its oldest undelivered one is ever in flight, so a
// receiver sees them in the order the task was written. Several processes
// may run a Deliverer on one database: a claim leases a stream, and a
// process that dies leaves it to another once the lease runs out
// (Options.Lease). A delivered notification's successor stays leased to
// the same deliverer (a2asrv.PushSettlement.Continue, up to 32 in a row),
// which costs one store write per notification. A Deliverer that is
// stopped releases what it had in flight at once. Wake, called after a task write, has the notification
// sent without waiting for the next poll.
//
// An attempt's outcome, from the HTTP status:
//
//   - 2xx: delivered.
//   - 408, 425, 429, 5xx, a timeout or a connection error (or a config
//     whose credentials Options.Open cannot read): tried again after an
//     exponential backoff with jitter, capped at Options.BackoffMax, or
//     after the receiver's Retry-After (delay seconds or an HTTP date)
//     when that is longer, capped at Options.BackoffMax too.
//   - Any other status (3xx, since redirects are not followed; 4xx): the
//     receiver refused it and would refuse it again, so the stream is
//     dead-lettered at once.
//   - A destination the policy refuses, when the URL is checked or when
//     its name is resolved: dead-lettered at once.
//
// After Options.MaxAttempts failures at one notification, or once it is
// older than Options.MaxAge (from when it was queued), the stream is
// dead-lettered too: a notification past MaxAge is not sent, and a failure
// whose retry would come after MaxAge dead-letters the stream at once. A dead stream
// keeps no notifications and gets no new ones; its state (attempts, last
// error, last delivery) is what a2asrv.PushDeliveryStore reports. Putting
// the config again (CreateTaskPushNotificationConfig with its id) makes it
// active and queues the task as it then stands.
//
// # What is sent
//
//	POST {url}
//	Content-Type: application/a2a+json
//	Authorization: {authentication.scheme} {authentication.credentials}
//	X-A2A-Notification-Token: {token}    (and A2A-Notification-Token, a2a-go's name)
//	A2A-Notification-Signature: {JWT}
//
// The config's authentication is sent as given (A2A §4.3.3); the token,
// when there is one, in both headers the reference SDKs read. The JWT
// (a2a.PushClaims, typ a2a.PushTokenType) is signed with the server's key,
// published at /.well-known/jwks.json; it names the task, the config, the
// notification (stable across retries, for de-duplication), a jti unique
// to the attempt (for replay detection) and the SHA-256 of the body. When
// the config has no authentication, the JWT is also the Authorization
// bearer token, so a receiver with ordinary bearer-token middleware can
// check it. a2aclient.PushVerifier is the receiver's check.
//
// # Telemetry
//
// Each attempt is a client span, a2a.push.deliver (a2a.task.id,
// a2a.push.config.id, a2a.push.attempt, a2a.push.outcome), and the POST
// carries its W3C trace context (traceparent). Deliverer.Collector exports
// novaos_push_deliveries_total{outcome} (delivered or failed),
// novaos_push_dead_letters_total and novaos_push_queue_depth, the last
// read from the outbox at each scrape (a2asrv.PushQueue).
//
// # Limits
//
// A name is resolved by the Deliverer, and every address it resolves to
// is checked against Options.Policy before it is dialled (and again by
// the dialer): a public-looking name that resolves to loopback is refused
// at delivery time, whenever the name was stored. No proxy is used, no
// redirect followed. Each attempt is bounded by Options.Timeout (connect:
// Options.ConnectTimeout), and at most Options.MaxResponseBytes of a
// response is read.
package a2apush
