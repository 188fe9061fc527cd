-- The used tokens' (delivery_used_tokens) times: the index finds the
-- ones past their time, which the delivery service prunes in bounded
-- batches (package delivery's Store.PruneUsedTokens).
CREATE INDEX delivery_used_tokens_until ON delivery_used_tokens (until_us);
