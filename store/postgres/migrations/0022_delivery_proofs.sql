-- The DPoP proofs pull delivery accepted (package delivery's
-- Store.RecordProof), so that a proof is accepted once by every replica:
-- each is the SHA-256 of its key's thumbprint and its jti (never the
-- proof), kept until until_us, when it is too old to be accepted anyway.
-- The index on until_us finds the ones to prune, in bounded batches.
CREATE TABLE delivery_proofs (
    id       bytea  NOT NULL PRIMARY KEY,
    until_us bigint NOT NULL
);
CREATE INDEX delivery_proofs_until ON delivery_proofs (until_us);
