// Package keyfile writes and reads secret key files owner-only and whole.
//
// It keeps secret files (signing keys, sealing keys) owner-only and whole:
// Create writes a new file under a temporary name, syncs it and links it
// into place, so a reader never sees it half-written, a crash leaves no
// empty key, and of two processes racing to create it the first one's wins;
// Replace does the same with a rename, for a file that changes (a rotated
// key ring); Read refuses an empty file and one other users may read.
//
//	data, err := keyfile.Read(path)
//	if errors.Is(err, fs.ErrNotExist) {
//		err = keyfile.Create(path, newKey()) // fs.ErrExist: someone else won; Read again
//	}
//	var loose *keyfile.ModeError // errors.As: tighten it, or refuse
package keyfile
