// Package a2av03 is the A2A 0.3 JSON-RPC wire model and its conversion to
// and from the v1 model in package a2a.
package a2av03
