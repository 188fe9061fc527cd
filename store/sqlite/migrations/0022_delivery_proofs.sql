-- The DPoP proofs pull delivery accepted (package delivery's
-- Store.RecordProof), so that a proof is accepted once by every process
-- using the database: each is the SHA-256 of its key's thumbprint and its
-- jti (never the proof), kept until until_us, when it is too old to be
-- accepted anyway. The index on until_us finds the ones to prune, in
-- bounded batches.
CREATE TABLE delivery_proofs (
    id       BLOB    NOT NULL PRIMARY KEY,
    until_us INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX delivery_proofs_until ON delivery_proofs (until_us);
