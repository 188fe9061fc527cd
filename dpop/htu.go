package dpop

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// HTU normalises a request URL as a proof names it: scheme and host in
// lower case, the scheme's default port dropped, no query and no
// fragment; a WebSocket URL is named by its HTTP scheme (ws as http, wss
// as https), as the upgrade request is.
func HTU(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" || u.User != nil {
		return "", errors.New("dpop: the URL is not an absolute http(s) or ws(s) URL")
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "ws":
		scheme = "http"
	case "wss":
		scheme = "https"
	case "http", "https":
	default:
		return "", errors.New("dpop: the URL is not an absolute http(s) or ws(s) URL")
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host = net.JoinHostPort(strings.Trim(host, "[]"), port)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return scheme + "://" + host + path, nil
}
