// Package httpgolden replays the HTTP exchanges golden files keep, for
// tests.
//
// A request is written as it goes on the wire, less the version: a
// "METHOD PATH" line, "Name: value" header lines, a blank line and the
// body. The answer comes back as such files keep it: the status code on
// a line, the response headers the test names (others vary from run to
// run), a blank line, and the body, which the caller formats.
package httpgolden
