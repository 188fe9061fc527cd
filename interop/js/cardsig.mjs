// Signs, verifies and canonicalizes agent cards with @a2a-js/sdk 1.3.0's
// signature helpers (and the `jose` library it depends on) for the Go
// interop tests in ../cardsig_js_test.go. Reads one JSON document on stdin
// and writes one on stdout:
//
//   node cardsig.mjs canon   < [card, …]            → [canonical string, …]
//   node cardsig.mjs sign    < [{"card", "alg"}, …]  → [{"card": signed card, "jwks": {"keys": [public JWK]}}, …]
//   node cardsig.mjs verify  < [{"card", "jwks"}, …] → [{"ok": bool, "error": string}, …]
//
// Cards are A2A wire JSON. sign makes a key pair per alg (EdDSA,
// ES256 or RS256) and signs with generateAgentCardSignature, protected
// header {alg, kid, typ: "JOSE"}; verify looks keys up by kid in the given
// JWKS only (the jku argument the SDK passes is ignored).

import {
  canonicalizeAgentCard,
  generateAgentCardSignature,
  verifyAgentCardSignature,
} from '@a2a-js/sdk';
import * as jose from 'jose';

// The verifier logs each failed entry with console.debug, which Node writes
// to stdout; keep stdout for the result.
console.debug = (...args) => console.error(...args);

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

// One key pair per algorithm and run.
const keyPairs = new Map();
function keyPair(alg) {
  if (!keyPairs.has(alg)) {
    const opts = { extractable: true };
    if (alg === 'RS256') opts.modulusLength = 2048;
    if (alg === 'EdDSA') opts.crv = 'Ed25519';
    keyPairs.set(alg, jose.generateKeyPair(alg, opts));
  }
  return keyPairs.get(alg);
}

async function sign({ card, alg }) {
  const { publicKey, privateKey } = await keyPair(alg);
  const jwk = await jose.exportJWK(publicKey);
  const kid = `a2a-js-${alg.toLowerCase()}`;
  const signer = generateAgentCardSignature(privateKey, { alg, kid, typ: 'JOSE' });
  const signed = await signer(card);
  return { card: signed, jwks: { keys: [{ ...jwk, kid, alg, use: 'sig' }] } };
}

async function verify({ card, jwks }) {
  const verifier = verifyAgentCardSignature(async (kid) => {
    const jwk = jwks.keys.find((k) => k.kid === kid);
    if (!jwk) throw new Error(`no key ${kid}`);
    return jose.importJWK(jwk, jwk.alg);
  });
  try {
    await verifier(card);
    return { ok: true };
  } catch (err) {
    return { ok: false, error: String(err?.message ?? err) };
  }
}

const mode = process.argv[2];
const input = await readStdin();
let out;
switch (mode) {
  case 'canon':
    out = input.map((card) => canonicalizeAgentCard(card));
    break;
  case 'sign':
    out = await Promise.all(input.map(sign));
    break;
  case 'verify':
    out = await Promise.all(input.map(verify));
    break;
  default:
    console.error(`usage: node cardsig.mjs canon|sign|verify < input.json`);
    process.exit(2);
}
process.stdout.write(JSON.stringify(out));
