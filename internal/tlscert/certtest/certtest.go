// Package certtest makes throwaway certificate authorities and server
// certificates for tests.
//
// Its keys are ECDSA P-256 keys made in the test, valid for an hour either
// side of now, never written anywhere but where a test says.
//
//	ca := certtest.NewCA(t)
//	cert, key := ca.Issue(t, "127.0.0.1", "localhost").WritePEM(t, dir)
//	pool := ca.Pool() // a client's RootCAs
package certtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority that exists for one test.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "certtest CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key}
}

// Pool is a certificate pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// PEM is the CA certificate in PEM.
func (ca *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// WriteCAFile writes the CA certificate to dir/ca.pem and returns its path.
func (ca *CA) WriteCAFile(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(path, ca.PEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Leaf is a server certificate and its key.
type Leaf struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Issue signs a server certificate for hosts (IP addresses or DNS names).
func (ca *CA) Issue(t testing.TB, hosts ...string) *Leaf {
	return ca.IssueValid(t, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), hosts...)
}

// IssueValid is Issue with the validity period given.
func (ca *CA) IssueValid(t testing.TB, notBefore, notAfter time.Time, hosts ...string) *Leaf {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: "certtest server"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &Leaf{Cert: cert, key: key}
}

// PEM returns the certificate and the private key in PEM.
func (l *Leaf) PEM(t testing.TB) (certPEM, keyPEM []byte) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(l.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.Cert.Raw}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// WritePEM writes the pair to dir/server.crt and dir/server.key, each
// through a temporary file renamed into place, as renewal tools do, and
// returns the two paths.
func (l *Leaf) WritePEM(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	c, k := l.PEM(t)
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	WriteFile(t, certFile, c)
	WriteFile(t, keyFile, k)
	return certFile, keyFile
}

// WriteFile replaces path's content through a temporary file and a rename.
func WriteFile(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// ClientConfig trusts only the CA.
func (ca *CA) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
}

// ServedSerial dials addr over TLS trusting ca and returns the serial of
// the certificate the server presented.
func ServedSerial(t testing.TB, addr string, ca *CA) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", addr, ca.ClientConfig())
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// WaitSerial waits until the server at addr presents the certificate with
// serial want, as it does once a reload has happened; the minute it allows
// only bounds a failure.
func WaitSerial(t testing.TB, addr string, ca *CA, want *big.Int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := ServedSerial(t, addr, ca)
		if got.Cmp(want) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still presents %x, want %x", addr, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n.Add(n, big.NewInt(1))
}
