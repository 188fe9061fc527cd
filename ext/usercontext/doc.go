// Package usercontext seals a run's secrets to the agent that receives them.
//
// It implements the user-context/v1 A2A extension: a run's secrets, each
// sealed by the platform to the receiving agent's recipient key and opened
// inside the agent process.
//
// The platform seals (SealPayload, Seal) with the recipient's public key
// and puts the Payload at metadata[URI] of the SendMessage request,
// activating URI with the A2A-Extensions header. SealRequest (or Attach,
// for a payload in hand) does all of it for a request, names the run in
// the platform context the agent reads, and returns the Activation the
// call must carry:
//
//	req := a2aclient.TextRequest("send the report", "", "")
//	act, err := usercontext.SealRequest(req, recipient, run, secrets)
//	res, err := client.SendMessage(ctx, req, a2aclient.WithExtensions(act.Extensions...))
//
// The agent opens one
// secret at a time (ParsePayload, Sealed.Open, or agent.Context.GetSecret,
// which does both) with a KeyRing over its key directory:
//
//	ring := usercontext.NewKeyRing("/var/run/novaos/agent-keys")
//	sealed, err := usercontext.ParsePayload(metadata[usercontext.URI])
//	if err != nil { … }
//	run := usercontext.Run{TenantID: tenant, InstanceID: instance, RunID: runID}
//	password, err := sealed.Open(ring, run, "SMTP_PASSWORD")
//	smtpAuth(user, password.Reveal())
//
// # Wire format
//
// The payload is one JSON object; members other than "secrets" are
// ignored, so v1 can grow siblings:
//
//	{"secrets": {"SMTP_PASSWORD": {"v":1, "suite":"X25519-HKDF-SHA256-A256GCM",
//	  "kid":"…", "epk":"…", "iv":"…", "ct":"…"}}}
//
// Secret names travel in the clear: an agent routes a value by name before
// it can decrypt anything, and the threat addressed is disclosure of
// values. Each envelope (Envelope) has exactly these members, every binary
// one unpadded base64url (RFC 4648 §5, no padding, no line breaks, zero
// trailing bits); unknown members are ignored:
//
//	v      the integer 1 (Version)
//	suite  "X25519-HKDF-SHA256-A256GCM" (Suite)
//	kid    the recipient key's id, non-empty; by convention its RFC 7638
//	       thumbprint (Thumbprint)
//	epk    the sender's ephemeral X25519 public key, 32 bytes, fresh for
//	       every envelope
//	iv     the AES-GCM nonce, 12 random bytes
//	ct     AES-256-GCM ciphertext of the UTF-8 value followed by the 16-byte
//	       tag; the value is at most MaxSecretSize (64 KiB) bytes
//
// # Construction
//
// With pkR the recipient's 32-byte public key and Label the ASCII string
// "novaos-sealed-envelope-v1":
//
//	shared = X25519(ephemeral private key, pkR)     (all-zero result: refused)
//	key    = HKDF-SHA256(IKM = shared, salt = empty,
//	                     info = Label || epk || pkR, L = 32)
//	aad    = Label || u32be(len(tenant))   || tenant
//	               || u32be(len(instance)) || instance
//	               || u32be(len(run))      || run
//	               || u32be(len(name))     || name
//	ct     = AES-256-GCM-Seal(key, iv, UTF-8 value, aad)
//
// The NovaOS Python SDK's sealed-envelope contract names the primitives and
// the envelope's members but leaves the byte layout to a platform document
// not available here; the suite string, the HKDF salt and info and the AAD
// layout above are this package's choices, pinned by the test vectors. The
// AAD length-prefixes every identifier so that no two deliveries share one;
// the HKDF info carries both public keys, as HPKE's key schedule does.
//
// The additional data binds the envelope to one delivery (Delivery): the
// tenant, the user-agent instance, the run and the name the secret is
// filed under, each non-empty UTF-8. It is never transmitted; the opener
// rebuilds it from identifiers it holds. An envelope replayed into
// another run, tenant or instance, or moved to another name, does not
// open. agent.Context.GetSecret builds it from the server-verified tenant
// (the caller's verified scope, else the platform context) and the
// platform context's instance_id and run_id.
//
// # Errors
//
// An opener checks, in this order: the envelope's shape (ErrFormat), its
// kid (ErrKeyUnavailable), then the AEAD (ErrOpen). Every failure to open
// matches ErrOpen. A well-formed envelope that does
// not authenticate (wrong key, tampered member, other delivery) is ErrOpen
// itself, with no detail: distinguishing the causes would be a decryption
// oracle. ErrFormat (malformed envelope or payload, unknown version or
// suite) and ErrKeyUnavailable (no key with that kid) refine it. A
// secret that did not arrive, or a request that did not activate URI, is
// ErrNotDelivered, which is not an ErrOpen. No error ever carries a value,
// key material or ciphertext; a secret's name and a kid may appear.
//
// # Keys
//
// A KeyRing reads {kid}.jwk files from a directory (a mounted Kubernetes
// Secret, say), each a private OKP JWK: {"kty":"OKP","crv":"X25519",
// "d":"…"} with optional "x" (checked against d) and "kid" (must equal the
// file name). A kid it has not seen is looked up on disk, so a rotated-in
// key works at once; a kid it has is re-checked with one stat per use, so a
// removed (revoked) key file stops working in a running process. See
// KeyRing. GenerateKey and WriteKeyFile provision a key; PublicJWK is what
// the sealing side stores and ParsePublicJWK reads. From a shell,
// `novaos keys generate --dir DIR` writes DIR/{kid}.jwk and prints the
// public JWK, and `novaos send AGENT TEXT --secret NAME --recipient-key
// FILE --instance ID` seals the environment variable NAME and sends it.
// The platform's agent registry keeps each agent's public recipient keys
// (registry.Agent.RecipientKeys, `novaos agents register --recipient-key`),
// so `novaos send NAME … --secret` seals to the registered key without a
// key file.
//
// # Test vectors
//
// testdata/vectors.json pins this construction so that other
// implementations can be checked against it. It is one JSON object:
//
//	suite, label       the Suite and Label constants
//	vectors[]          sealings that must reproduce exactly:
//	  name               a short description
//	  recipient_jwk      the recipient's private JWK (kty, crv, kid, x, d)
//	  ephemeral_private  the sender's ephemeral X25519 private key, base64url
//	  iv                 the nonce, base64url
//	  delivery           {tenant_id, instance_id, run_id, secret_name}
//	  plaintext          the value, a UTF-8 string
//	  aad                the additional data, hex
//	  shared_secret      the X25519 output, hex
//	  content_key        the HKDF output, hex
//	  envelope           the expected envelope
//	invalid[]          envelopes that must not open with the given key and
//	                   delivery:
//	  name, recipient_jwk, delivery, envelope
//	  error              "open" (ErrOpen itself), "format" (ErrFormat) or
//	                     "key_unavailable" (ErrKeyUnavailable)
//
// An implementation passes when sealing each vector's plaintext with its
// ephemeral key and iv yields its envelope byte for byte (member values;
// member order is free), opening it yields the plaintext, and every
// invalid envelope fails with the named class. The file is written by
// `go test ./ext/usercontext -run TestVectors -update` from fixed inputs,
// so rewriting it reproduces the same bytes. testdata/crosscheck.mjs
// (Node's built-in crypto, run by the tests when node is installed) and
// testdata/crosscheck.py (pyca/cryptography, run by hand) re-derive every
// vector independently.
package usercontext
