package registrysvc

import "novaos.dev/novaos/internal/httpapi"

// WriteMode says who may change the registry through the API: the
// httpapi.AdminRule's two rules.
type WriteMode = httpapi.WriteMode

const (
	// WritesLoopbackOnly: no admin token is configured; writes are
	// accepted from loopback peers only.
	WritesLoopbackOnly = httpapi.WritesLoopbackOnly
	// WritesNeedToken: writes need the admin token, from any peer.
	WritesNeedToken = httpapi.WritesNeedToken
)

// WriteMode is the access rule the Handler applies to writes.
func (s *Service) WriteMode() WriteMode { return httpapi.AdminRule{Token: s.opts.AdminToken}.Mode() }
