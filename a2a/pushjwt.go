package a2a

// NovaOS signs every push notification it sends with a JWT of its own, so
// a receiver can tell a notification came from the agent (whatever
// credentials the config carries) and refuse one replayed or altered. This
// is not part of A2A v1.0.1: a peer that does not know it ignores the
// header. The sender is package a2a/a2apush; the receiver's check is
// a2aclient.PushVerifier.

// Push-notification HTTP headers and the JWT's type.
const (
	// HeaderPushSignature carries the notification's JWT, on every
	// notification; it is also sent as "Authorization: Bearer" when the
	// config names no authentication of its own.
	HeaderPushSignature = "A2A-Notification-Signature"
	// HeaderPushToken carries the config's token as the client gave it:
	// the header @a2a-js/sdk and a2a-python send and read.
	HeaderPushToken = "X-A2A-Notification-Token"
	// HeaderPushTokenAlt carries it too: the header a2a-go reads.
	HeaderPushTokenAlt = "A2A-Notification-Token"
	// PushTokenType is the JWT's typ header: a push notification's JWT is
	// never mistaken for another token of the same issuer.
	PushTokenType = "a2a-push+jwt"
)

// PushClaims are the claims of a push notification's JWT.
type PushClaims struct {
	Issuer   string `json:"iss"` // the agent server's base URL
	Audience string `json:"aud"` // the webhook URL the notification was sent to
	IssuedAt int64  `json:"iat"` // seconds since 1970
	Expiry   int64  `json:"exp"` // a few minutes after iat
	// ID is unique to one delivery attempt: a receiver that has seen it
	// before is looking at a replay.
	ID string `json:"jti"`
	// TaskID and ConfigID name the task and the config the notification
	// is about.
	TaskID   string `json:"taskId"`
	ConfigID string `json:"configId"`
	// NotificationID is the same for every attempt at one notification,
	// and never another's of the same server (database), so a receiver
	// can drop a duplicate delivery (delivery is at least once).
	NotificationID string `json:"notificationId"`
	// BodySHA256 is the base64url (unpadded) SHA-256 of the exact body
	// bytes sent.
	BodySHA256 string `json:"bodySha256"`
}
