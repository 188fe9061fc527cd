// Checks vectors.json with an independent implementation: Node's built-in
// crypto (no packages), the runtime of a TypeScript sealing side.
//
//   node testdata/crosscheck.mjs        (run by TestVectorsNode)
import { createCipheriv, createDecipheriv, createHash, createPrivateKey, createPublicKey, diffieHellman, hkdfSync } from 'node:crypto';
import { readFileSync } from 'node:fs';

const file = JSON.parse(readFileSync(new URL('./vectors.json', import.meta.url), 'utf8'));
const label = Buffer.from(file.label, 'utf8');
const b64d = (s) => {
  if (typeof s !== 'string' || !/^[A-Za-z0-9_-]*$/.test(s)) throw new Error('format');
  const b = Buffer.from(s, 'base64url');
  if (b.toString('base64url') !== s) throw new Error('format');
  return b;
};
const b64e = (b) => Buffer.from(b).toString('base64url');
const privKey = (d) => createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b656e04220420', 'hex'), d]), format: 'der', type: 'pkcs8' });
const pubKey = (x) => createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b656e032100', 'hex'), x]), format: 'der', type: 'spki' });
const rawPub = (k) => createPublicKey(k).export({ format: 'der', type: 'spki' }).subarray(12);
const u32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b; };
const aadOf = (d) => Buffer.concat([label, ...[d.tenant_id, d.instance_id, d.run_id, d.secret_name]
  .flatMap((s) => { const b = Buffer.from(s, 'utf8'); return [u32(b.length), b]; })]);
const keyOf = (shared, epk, pkR) => Buffer.from(hkdfSync('sha256', shared, Buffer.alloc(0), Buffer.concat([label, epk, pkR]), 32));

// open returns the plaintext or throws the error class: the envelope's
// shape first (format), then its kid (key_unavailable), then the AEAD.
function open(env, recipientD, kid, delivery) {
  if (env.v !== 1 || env.suite !== file.suite) throw new Error('format');
  if (typeof env.kid !== 'string' || env.kid === '') throw new Error('format');
  const epk = b64d(env.epk), iv = b64d(env.iv), ct = b64d(env.ct);
  if (epk.length !== 32 || iv.length !== 12 || ct.length < 16) throw new Error('format');
  if (env.kid !== kid) throw new Error('key_unavailable');
  const priv = privKey(recipientD);
  let shared;
  try { shared = diffieHellman({ privateKey: priv, publicKey: pubKey(epk) }); } catch { throw new Error('open'); }
  if (shared.every((x) => x === 0)) throw new Error('open');
  const dec = createDecipheriv('aes-256-gcm', keyOf(shared, epk, rawPub(priv)), iv);
  dec.setAAD(aadOf(delivery));
  dec.setAuthTag(ct.subarray(ct.length - 16));
  try { return Buffer.concat([dec.update(ct.subarray(0, ct.length - 16)), dec.final()]).toString('utf8'); } catch { throw new Error('open'); }
}

let bad = 0;
const check = (ok, name) => { console.log((ok ? 'ok   ' : 'FAIL ') + name); if (!ok) bad++; };
for (const v of file.vectors) {
  const d = b64d(v.recipient_jwk.d);
  const pkR = rawPub(privKey(d));
  const eph = privKey(b64d(v.ephemeral_private));
  const epk = rawPub(eph);
  const shared = diffieHellman({ privateKey: eph, publicKey: pubKey(pkR) });
  const key = keyOf(shared, epk, pkR);
  const aad = aadOf(v.delivery);
  const enc = createCipheriv('aes-256-gcm', key, b64d(v.iv));
  enc.setAAD(aad);
  const ct = Buffer.concat([enc.update(Buffer.from(v.plaintext, 'utf8')), enc.final(), enc.getAuthTag()]);
  const kid = b64e(createHash('sha256').update(`{"crv":"X25519","kty":"OKP","x":"${b64e(pkR)}"}`).digest());
  const e = v.envelope;
  check(e.epk === b64e(epk) && e.ct === b64e(ct) && e.iv === v.iv && e.kid === kid && v.recipient_jwk.x === b64e(pkR) &&
    aad.toString('hex') === v.aad && shared.toString('hex') === v.shared_secret && key.toString('hex') === v.content_key &&
    open(e, d, v.recipient_jwk.kid, v.delivery) === v.plaintext, 'seal and open: ' + v.name);
}
for (const v of file.invalid) {
  let got = 'none';
  try { open(v.envelope, b64d(v.recipient_jwk.d), v.recipient_jwk.kid, v.delivery); } catch (err) { got = err.message; }
  check(got === v.error, `invalid: ${v.name} (${got})`);
}
process.exit(bad ? 1 : 0);
