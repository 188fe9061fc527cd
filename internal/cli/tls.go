package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcclient"
)

// caFlag adds --ca-cert to a client command.
func caFlag(fs *flag.FlagSet) *string {
	return fs.String("ca-cert", "", "PEM `file` of certificate authorities to trust for https:// and TLS gRPC, besides the system's (a server whose --tls-cert a private CA issued); SSL_CERT_FILE also works on Linux, in place of the system's")
}

// clientTLS is a client TLS configuration trusting the system's roots and
// the certificates in file; nil for "" (Go's defaults).
func clientTLS(file string) (*tls.Config, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--ca-cert: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // none on this system: the file's only
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("--ca-cert %s: %w", file, errNoCertificates)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

var errNoCertificates = errors.New("no PEM certificate in the file")

// httpClient is an HTTP client using cfg; nil for a nil cfg (the caller's
// default client).
func httpClient(cfg *tls.Config) *http.Client {
	if cfg == nil {
		return nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	return &http.Client{Transport: t}
}

// transportsWith are clientTransports whose TLS uses cfg.
func transportsWith(cfg *tls.Config) map[string]a2aclient.TransportFactory {
	if cfg == nil {
		return clientTransports
	}
	return map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(&grpcclient.Options{TLSConfig: cfg})}
}
