// Package problem is RFC 9457 problem details, the platform's REST error body.
//
// Every REST API the platform serves answers a refusal with a [Problem]
// as [ContentType]; a client reads the body back into one and branches on
// its Type, a stable URI.
// The types every service shares (a malformed body, an unknown route, a
// missing token, an overloaded server, …) are listed here once; a service
// adds its own for its domain's errors. The clients of the gate and the
// registry embed Problem in their own error types, which add what their
// callers branch on (errors.Is sentinels, the gate's reason).
//
//	p := &problem.Problem{Type: problem.TypeNotFound, Title: "Not Found", Status: 404}
//	w.Header().Set("Content-Type", problem.ContentType)
//	w.WriteHeader(p.Status)
//	json.NewEncoder(w).Encode(p)
//
// The package depends on the standard library only, so every SDK package
// and every service can use it.
package problem
