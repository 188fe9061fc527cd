#!/usr/bin/env python3
"""Check vectors.json with an independent implementation (pyca/cryptography).

Not run by the test suite; run it by hand: python3 testdata/crosscheck.py
"""
import base64, hashlib, json, os, struct, sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def b64e(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def raw(pub):
    return pub.public_bytes(Encoding.Raw, PublicFormat.Raw)


f = json.load(open(os.path.join(os.path.dirname(__file__), "vectors.json"), encoding="utf-8"))
label = f["label"].encode()
bad = 0
for v in f["vectors"]:
    pk_r = raw(X25519PrivateKey.from_private_bytes(b64d(v["recipient_jwk"]["d"])).public_key())
    eph = X25519PrivateKey.from_private_bytes(b64d(v["ephemeral_private"]))
    epk = raw(eph.public_key())
    shared = eph.exchange(X25519PublicKey.from_public_bytes(pk_r))
    key = HKDF(hashes.SHA256(), 32, None, label + epk + pk_r).derive(shared)
    d = v["delivery"]
    aad = label + b"".join(
        struct.pack(">I", len(x.encode())) + x.encode()
        for x in (d["tenant_id"], d["instance_id"], d["run_id"], d["secret_name"])
    )
    ct = AESGCM(key).encrypt(b64d(v["iv"]), v["plaintext"].encode(), aad)
    kid = b64e(hashlib.sha256(('{"crv":"X25519","kty":"OKP","x":"%s"}' % b64e(pk_r)).encode()).digest())
    env = v["envelope"]
    ok = (env["epk"], env["ct"], env["kid"], v["aad"], v["content_key"]) == (b64e(epk), b64e(ct), kid, aad.hex(), key.hex())
    print(("ok   " if ok else "FAIL ") + v["name"])
    bad += not ok
sys.exit(1 if bad else 0)
