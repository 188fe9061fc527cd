// Package grpcclient is the gRPC transport of the A2A client.
//
// Plugged into package a2aclient, it lets a Client call an agent's GRPC
// interface with every method, exactly as it calls the HTTP bindings.
//
//	c, err := a2aclient.NewFromURL(ctx, "https://agents.example.com/agents/echo", &a2aclient.Options{
//		Transports:         []string{a2a.BindingGRPC},
//		TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)},
//	})
//
// The Client has done its part when a call arrives (interceptors, auth,
// the interface's tenant, A2A-Version and A2A-Extensions): the transport
// sends call.Header as gRPC metadata, converts the typed request and the
// answer with package a2agrpc, and turns a gRPC status into the
// *a2aclient.CallError the HTTP transports return for the same A2A error.
// A status that carries no A2A error (UNAVAILABLE, a connection refused)
// matches a2aclient.ErrUnreachable.
//
// The interface's URL is https://host:port (TLS) or http://host:port
// (plaintext), the form A2A names interfaces in, or a gRPC target
// (host:port, or any target grpc.NewClient takes), dialed in plaintext on
// loopback and over TLS elsewhere. TLS trusts the system's roots unless
// Options give a TLSConfig; Options.Credentials override the choice. Message size limits are the client's: the answer limit is
// a2aclient's MaxResponseBytes. The connection is made at the first call
// and kept for the transport's life; gRPC closes it when idle.
package grpcclient
