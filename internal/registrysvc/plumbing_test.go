package registrysvc_test

import (
	"testing"

	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/registry"
)

// The registry's problems for what httpapi answers (bodies, queries,
// routes, callers) are httpapi's: a client branching on a type sees one
// URI whichever service answered.
func TestSharedProblemTypes(t *testing.T) {
	for _, tc := range []struct{ registry, httpapi string }{
		{registry.ProblemMalformedJSON, httpapi.ProblemMalformedJSON},
		{registry.ProblemInvalidQuery, httpapi.ProblemInvalidQuery},
		{registry.ProblemInvalidPageToken, httpapi.ProblemInvalidPageToken},
		{registry.ProblemBodyTooLarge, httpapi.ProblemBodyTooLarge},
		{registry.ProblemUnsupportedMedia, httpapi.ProblemUnsupportedMedia},
		{registry.ProblemNotFound, httpapi.ProblemNotFound},
		{registry.ProblemMethodNotAllowed, httpapi.ProblemMethodNotAllowed},
		{registry.ProblemInternal, httpapi.ProblemInternal},
		{registry.ProblemUnauthorized, httpapi.ProblemUnauthorized},
		{registry.ProblemContentTypeHeader, httpapi.ProblemContentType},
	} {
		if tc.registry != tc.httpapi {
			t.Errorf("registry %s, httpapi %s", tc.registry, tc.httpapi)
		}
	}
}
