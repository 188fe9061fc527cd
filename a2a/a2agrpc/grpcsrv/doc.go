// Package grpcsrv serves A2A agents over gRPC.
//
// It is the gRPC binding of the A2A server: it serves the
// lf.a2a.v1.A2AService of package a2apb over one or more a2asrv.Handlers.
//
// Each method converts the generated request to the wire model (package
// a2agrpc), hands it to the handler's transport-neutral core
// (a2asrv.Handler.Core: a2asrv.Core.SendMessage, …) as every binding
// does, with the call's gRPC metadata as its service parameters
// (a2a-version, a2a-extensions, authorization, …), and converts the
// answer back. Errors are gRPC
// statuses with the A2A v1.0.1 code and a google.rpc.ErrorInfo detail
// (a2agrpc.Status). The two streaming methods send one StreamResponse
// message per frame; gRPC's own flow control and keep-alive replace the
// SSE batching and comments of the HTTP bindings. The extensions a call
// activated are sent back in the a2a-extensions response header.
//
// One gRPC service has no path to tell agents apart, so a server hosting
// several routes by the request's tenant (A2A's own multi-tenancy field,
// which a client copies verbatim from the AgentInterface it picked): with
// NewMux, a tenant "echo" reaches the handler named echo with no tenant,
// and "echo/acme" reaches it with tenant "acme". A card lists the gRPC
// interface of each agent with its name as the interface's tenant.
//
// Limits are the grpc.Server's: give it grpc.MaxRecvMsgSize (the
// platform sets it to the HTTP bindings' body limit), and keep-alive and
// connection settings as the deployment needs.
package grpcsrv
