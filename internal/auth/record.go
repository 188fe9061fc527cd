package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	"novaos.dev/novaos/internal/keyfile"
)

// RecordFile is where a server records, in its data directory, the
// issuer and audience its tokens carry and the algorithm it signs with,
// so that `novaos token mint` and `token verify` given the same directory
// sign and check what the server accepts without being told its URL, and
// a mint does not rotate the server's key to another algorithm.
const RecordFile = "token-issuer.json"

// Record is what a server's verifier expects of the tokens it accepts.
type Record struct {
	Issuer   string `json:"issuer"`
	Audience string `json:"audience"`
	// Algorithm is what the server signs with (RS256 or EdDSA); a record
	// written before servers recorded it has none.
	Algorithm string `json:"algorithm,omitempty"`
}

// Record is what the issuer signs into every token: its Options' Issuer,
// Audience and Algorithm.
func (i *Issuer) Record() Record {
	return Record{Issuer: i.opts.Issuer, Audience: i.opts.Audience, Algorithm: i.opts.Algorithm}
}

func (r Record) check() error {
	u, err := url.Parse(r.Issuer)
	switch {
	case r.Issuer == "":
		return errors.New("no issuer")
	case err != nil || u.Scheme == "" || u.Host == "":
		// Not the error's text: the value is the operator's to read in
		// the file, and an error here names the file.
		return errors.New("the issuer is not an absolute URL")
	case r.Audience == "":
		return errors.New("no audience")
	case r.Algorithm != "" && r.Algorithm != RS256 && r.Algorithm != EdDSA:
		return errors.New("the algorithm is not RS256 or EdDSA")
	}
	return nil
}

// WriteRecord records r in dir (RecordFile), replacing the record there in
// one step: a reader sees the old record or the new one, whole. The file
// is owner-only like the key ring beside it.
func WriteRecord(dir string, r Record) error {
	if err := r.check(); err != nil {
		return fmt.Errorf("auth: token issuer record: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("auth: token issuer record: %w", err)
	}
	if err := keyfile.Replace(filepath.Join(dir, RecordFile), append(data, '\n')); err != nil {
		return fmt.Errorf("auth: token issuer record: %w", err)
	}
	return nil
}

// ReadRecord reads the record a server wrote in dir. No record gives an
// error matching fs.ErrNotExist; a record that is not one, or that other
// users may change, an error naming the file.
func ReadRecord(dir string) (Record, error) {
	path := filepath.Join(dir, RecordFile)
	data, err := keyfile.Read(path)
	if err != nil {
		return Record{}, fmt.Errorf("auth: token issuer record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("auth: token issuer record %s is not JSON with an issuer, an audience and perhaps an algorithm", path)
	}
	if err := r.check(); err != nil {
		return Record{}, fmt.Errorf("auth: token issuer record %s: %w", path, err)
	}
	return r, nil
}
