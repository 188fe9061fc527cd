package rest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/rest"
	"novaos.dev/novaos/secret"
)

// APIError is a client package's own error of a refusal.
type APIError struct {
	Status int
	Title  string
}

func (e *APIError) Error() string { return fmt.Sprintf("things: %d %s", e.Status, e.Title) }

var errProtocol = errors.New("things: malformed answer")

// A client package sends its calls through a rest.Client and keeps its own
// error types.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-1234" {
			w.Header().Set("Content-Type", problem.ContentType)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"type":"https://novaos.dev/problems/unauthorized","title":"Unauthorized","status":401}`)
			return
		}
		fmt.Fprintf(w, `{"tenant":%q}`, r.Header.Get(rest.TenantHeader))
	}))
	defer srv.Close()

	base, err := rest.BaseURL(srv.URL + "/")
	if err != nil {
		panic(err)
	}
	api := &rest.Client{
		Base: base, Tenant: "acme", Token: secret.New("tok-1234"),
		Retry:     &resilience.Policy{Attempts: 3, Breaker: resilience.NewBreaker(nil)},
		Malformed: errProtocol,
		Refused:   func(r *rest.Refusal) error { return &APIError{Status: r.Status, Title: r.Title} },
	}
	var thing struct{ Tenant string }
	err = api.Do(context.Background(), rest.Call{Method: http.MethodGet, Path: "/things/t1", Retry: rest.RetryTransient}, &thing)
	fmt.Println(thing.Tenant, err)

	stranger := *api
	stranger.Token = secret.New("wrong-token")
	err = stranger.Do(context.Background(), rest.Call{Method: http.MethodDelete, Path: "/things/t1"}, nil)
	var e *APIError
	fmt.Println(errors.As(err, &e), err)
	// Output:
	// acme <nil>
	// true things: 401 Unauthorized
}
