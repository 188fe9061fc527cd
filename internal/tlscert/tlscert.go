package tlscert

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultInterval is how often Run looks at the files when
// Options.Interval is zero.
const DefaultInterval = 5 * time.Second

// maxFileBytes bounds what is read of either file: a certificate chain or
// a key is a few KiB, and the files are read on every check.
const maxFileBytes = 1 << 20

// Options tune a Pair; nil means defaults.
type Options struct {
	// Interval is how often Run checks the files for a change (default
	// DefaultInterval); negative means Run never checks them and only
	// Reload reads them again.
	Interval time.Duration
	// Logger receives a line for each pair loaded and each one refused;
	// nil discards them.
	Logger *slog.Logger
	// Now is the clock certificates' validity is checked against (default
	// time.Now).
	Now func() time.Time
}

// Pair is a certificate chain and its private key, read from two files
// and swapped for the files' new content when it loads. It is safe for
// concurrent use.
type Pair struct {
	certFile, keyFile string
	interval          time.Duration
	log               *slog.Logger
	now               func() time.Time

	cur atomic.Pointer[tls.Certificate]

	mu   sync.Mutex // serializes loads; guards seen
	seen [2][sha256.Size]byte
}

// Load reads the pair from certFile (PEM certificates, the leaf first) and
// keyFile (its PEM private key). It fails when either file is unreadable,
// the key does not match the leaf, or the leaf is not valid now.
func Load(certFile, keyFile string, opts *Options) (*Pair, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	p := &Pair{certFile: certFile, keyFile: keyFile, interval: o.Interval, log: o.Logger, now: o.Now}
	if p.interval == 0 {
		p.interval = DefaultInterval
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	if _, err := p.load(true); err != nil {
		return nil, err
	}
	return p, nil
}

// Certificate is the pair in use.
func (p *Pair) Certificate() *tls.Certificate { return p.cur.Load() }

// GetCertificate is tls.Config.GetCertificate: the pair in use.
func (p *Pair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return p.cur.Load(), nil
}

// Config returns a server tls.Config serving the pair in use, TLS 1.2 or
// later.
func (p *Pair) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: p.GetCertificate}
}

// Reload reads the files again now, whether or not they changed. On error
// the pair in use stays, and the error says why the new one was refused.
func (p *Pair) Reload() error {
	_, err := p.load(true)
	return err
}

// Run checks the files every Options.Interval until ctx is done, and loads
// them when their content changed since the last load or attempt. It
// returns at once when the interval is negative.
func (p *Pair) Run(ctx context.Context) {
	if p.interval < 0 {
		return
	}
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// Errors are logged by load; the pair in use stays.
			_, _ = p.load(false)
		}
	}
}

// load reads both files and, when force is set or their content differs
// from what was last seen, makes them the pair in use. Content, not the
// files' times or sizes, decides: a renewal written in place within one
// timestamp tick, or to a file of the same size, is still seen. Each
// content is tried once: a pair refused is not retried (nor logged again)
// until a file changes or Reload is called.
func (p *Pair) load(force bool) (changed bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	certPEM, err := readFile(p.certFile)
	if err == nil {
		var keyPEM []byte
		if keyPEM, err = readFile(p.keyFile); err == nil {
			defer clear(keyPEM)
			seen := [2][sha256.Size]byte{sha256.Sum256(certPEM), sha256.Sum256(keyPEM)}
			if !force && seen == p.seen && p.cur.Load() != nil {
				return false, nil
			}
			p.seen = seen
			err = p.swap(certPEM, keyPEM)
		}
	}
	if err != nil {
		err = fmt.Errorf("tlscert: %w", err)
		if p.cur.Load() != nil {
			p.log.Error("tlscert: new certificate refused; the one in use stays", "certFile", p.certFile, "keyFile", p.keyFile, "err", err)
		}
		return false, err
	}
	return true, nil
}

// swap parses and checks the pair and makes it the one in use.
func (p *Pair) swap(certPEM, keyPEM []byte) error {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// Its message names what failed, never key material.
		return fmt.Errorf("%s and %s: %w", p.certFile, p.keyFile, err)
	}
	// c.Leaf is set unless GODEBUG=x509keypairleaf=0; parse it either way.
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return fmt.Errorf("%s: %w", p.certFile, err)
	}
	c.Leaf = leaf
	switch now := p.now(); {
	case now.After(leaf.NotAfter):
		return fmt.Errorf("%s: %w: expired %s", p.certFile, ErrNotValid, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return fmt.Errorf("%s: %w: valid from %s", p.certFile, ErrNotValid, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	p.cur.Store(&c)
	p.log.Info("tlscert: certificate loaded", "certFile", p.certFile, "subject", leaf.Subject.String(),
		"serial", leaf.SerialNumber.Text(16), "notAfter", leaf.NotAfter.UTC().Format(time.RFC3339))
	return nil
}

// ErrNotValid is the error of a certificate outside its validity period.
var ErrNotValid = errors.New("certificate not valid now")

// readFile reads at most maxFileBytes of a file.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxFileBytes {
		clear(b)
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFileBytes)
	}
	return b, nil
}
