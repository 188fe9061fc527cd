// Package sealkey seals values at rest under a key file.
//
// What a server must store but nobody with the database should read (a
// webhook's credentials, an agent instance's secrets, a run's custom
// headers) is sealed before it reaches the store: AES-256-GCM under a
// 32-byte key kept in an owner-only file beside the data, with a fresh
// random nonce per value and additional data that binds the value to
// what it is (a purpose) and where it is stored (a binding: tenant, row,
// field). A value copied to another row, or a row whose binding fields
// are rewritten, fails to open; nothing opens silently wrong.
//
//	s, err := sealkey.Open(filepath.Join(dataDir, "seal.key"), &sealkey.Options{Logger: log})
//	v, err := s.Seal([]byte(secret), "novaos instance-secret v1", tenant, instanceID, name)
//	// store v: "novaos-sealed:v1:<kid>:<base64url>"
//	plain, err := s.Unseal(v, "novaos instance-secret v1", tenant, instanceID, name)
//
// The key file holds the key in base64 on one line (openssl rand -base64
// 32 writes one). Open reads it if it exists and creates nothing; the
// first Seal creates it, owner-only, linked into place whole, so
// processes racing to create it all end with the one key, and a server
// that never seals never writes a key. A file other users may read is
// made owner-only.
//
// Every sealed value names its key by id (the first 8 bytes of the key's
// SHA-256), so a process holding another key says so (a *KeyError)
// instead of failing obscurely: replicas that share a database must
// share the key file. Unseal's errors say which of four things went
// wrong, never with the value or the plaintext: ErrFormat (not a sealed
// value), *KeyError (another key, or no key file), ErrKeyFile (the key
// file is unusable), ErrNotOpened (altered, or sealed for another purpose
// or binding).
//
// A key file may be renamed without re-sealing anything: Options.Adopt
// names the earlier file, copied into place when the new one does not
// exist, so the key and its id stay the same.
//
// Purposes in use (none may be another followed by more bytes):
//
//	novaos push-config v1   a push config's token and credentials (agenthost)
package sealkey
