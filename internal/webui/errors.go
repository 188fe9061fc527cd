package webui

import "errors"

// ErrNoSession is Authenticated's answer to a request without a usable
// session cookie.
var ErrNoSession = errors.New("webui: no session")

// redacted is an Authenticate error whose text never shows the token.
type redacted struct {
	err   error
	token string
}

func (e redacted) Error() string { return Redact(e.err, e.token) }
func (e redacted) Unwrap() error { return e.err }
