// Package tlscert serves a TLS certificate pair from PEM files and keeps it
// current.
//
// The files are read again when they change and on demand (a SIGHUP handler
// calls Reload), without dropping a connection. A pair that does not load
// (unreadable, mismatched, expired) leaves the one in use and is logged, so
// a half-written renewal never takes a server down.
//
//	pair, err := tlscert.Load("server.crt", "server.key", &tlscert.Options{Logger: log})
//	if err != nil {
//		return err
//	}
//	go pair.Run(ctx) // watch the files until ctx ends
//	srv := &http.Server{TLSConfig: pair.Config()}
//	err = srv.ServeTLS(ln, "", "")
//
// Config asks for TLS 1.2 or later and picks the certificate per
// handshake, so one Config serves an HTTP and a gRPC listener alike.
package tlscert
