package keyfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// MaxSize is the largest file Read reads: a key file is small, and a
// huge one is a mistake (or a device) that should not be read whole.
const MaxSize = 1 << 20

// ErrEmpty is matched by Read's error for a file holding nothing but
// white space. Files are linked into place whole, so such a file is not a
// creator still writing: it holds no key, and is left for the operator.
var ErrEmpty = errors.New("keyfile: file is empty")

// ErrLooseMode is matched by a *ModeError.
var ErrLooseMode = errors.New("keyfile: file is readable by other users")

// ModeError is Read's error for a file group or others may access; the
// caller tightens it (os.Chmod to 0600) and reads again, or refuses it.
type ModeError struct {
	Path string
	Mode fs.FileMode
}

func (e *ModeError) Error() string {
	return fmt.Sprintf("keyfile: %s has mode %s: other users may read it (chmod 600 %s)", e.Path, e.Mode.Perm(), e.Path)
}

func (e *ModeError) Unwrap() error { return ErrLooseMode }

// Read returns the content of the owner-only file at path. A missing file
// gives an error matching fs.ErrNotExist; an empty one ErrEmpty; one that
// others may access a *ModeError (not on Windows, which has no such
// bits); one that is not a regular file or is larger than MaxSize an
// error naming it. The content is never part of an error.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("keyfile: %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("keyfile: %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, &ModeError{Path: path, Mode: fi.Mode()}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("keyfile: read %s: %w", path, err)
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("keyfile: %s is larger than %d bytes", path, MaxSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: %s (remove it to have a new key made, or write the key into it)", ErrEmpty, path)
	}
	return data, nil
}

// Create writes data to a new owner-only file at path, in an owner-only
// directory made if missing. It fails with an error matching fs.ErrExist
// when the file exists, also when another process created it first.
func Create(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // once linked, the file lives on under its own name
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("keyfile: create %s: %w", path, fs.ErrExist)
		}
		return fmt.Errorf("keyfile: link %s into place: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// Replace writes data to the owner-only file at path, replacing whatever
// is there in one step: a reader sees the old content or the new, whole.
func Replace(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("keyfile: rename %s into place: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// writeTemp writes data, synced, to a new 0600 file beside path.
func writeTemp(path string, data []byte) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("keyfile: directory of %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp") // mode 0600
	if err != nil {
		return "", fmt.Errorf("keyfile: create %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("keyfile: write %s: %w", path, err)
	}
	return tmp, nil
}

// syncDir makes a new name in dir durable where the system allows it (not
// on Windows, where a directory does not open for syncing).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
