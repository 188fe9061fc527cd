package sqlstore

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/tools"
)

// FileInfoCols are the columns of tool_files a listing reads, in
// ScanFileInfo's order; content is the column after them.
const FileInfoCols = `tenant, agent, path, version, size, content_type, sha256, created_us, updated_us`

// ScanFileInfo reads a row of FileInfoCols.
func ScanFileInfo(s Scanner) (tools.FileInfo, error) {
	var f tools.FileInfo
	var created, updated int64
	if err := s.Scan(&f.Tenant, &f.Agent, &f.Path, &f.Version, &f.Size, &f.ContentType, &f.SHA256, &created, &updated); err != nil {
		return tools.FileInfo{}, err
	}
	f.CreatedAt, f.UpdatedAt = FromMicros(created), FromMicros(updated)
	return f, nil
}

// PrepareFilePut checks p (tools.FilePut.Validate) and returns the record
// its write stores, without a version: the store assigns that (and keeps
// CreatedAt on a replace). A zero p.Now is the clock's now.
func PrepareFilePut(p *tools.FilePut) (tools.FileInfo, error) {
	if err := p.Validate(); err != nil {
		return tools.FileInfo{}, err
	}
	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = Stored(now)
	sum := sha256.Sum256(p.Content)
	return tools.FileInfo{FileKey: p.FileKey, Size: int64(len(p.Content)), ContentType: p.ContentType,
		SHA256: hex.EncodeToString(sum[:]), CreatedAt: now, UpdatedAt: now}, nil
}

// FileContent is content as a store binds it: never nil, which both
// drivers would store as NULL.
func FileContent(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// FilePage is where a listing of f starts, from (inclusive) or after
// (exclusive) as after says, and where it ends, before end (exclusive)
// when bounded: the range of paths past f.After that start with
// f.Prefix, in byte order, which is how both stores compare paths
// (SQLite's BINARY, PostgreSQL's "C" collation). f is valid.
func FilePage(f *tools.FileFilter) (from string, after bool, end string, bounded bool) {
	from = f.Prefix
	if f.After >= f.Prefix {
		from, after = f.After, true
	}
	end, bounded = prefixEnd(f.Prefix)
	return from, after, end, bounded
}

// prefixEnd is the least string past every string that starts with
// prefix: prefix with its last character replaced by the next one (UTF-8
// orders as code points do, and no character's encoding is a prefix of
// another's). Trailing U+10FFFF, which has no next, are dropped first;
// ok is false when nothing is left (prefix "" bounds nothing). The
// result is valid UTF-8, which PostgreSQL text requires.
func prefixEnd(prefix string) (end string, ok bool) {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		if r == utf8.MaxRune {
			continue
		}
		r++
		if r == 0xD800 { // the surrogates are not characters
			r = 0xE000
		}
		return prefix + string(r), true
	}
	return "", false
}
