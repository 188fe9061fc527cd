-- The LLM gateway's store (llm.Store): providers and model routes, by
-- tenant ('' for the platform's) and name; budgets, by tenant and
-- instance ('' for the tenant's own); the usage ledger.
--
-- Times are microseconds since the Unix epoch; costs are nanodollars.
-- A provider's and a route's key, version and times are columns, the
-- rest their JSON encoding in body, so a field they gain needs no
-- migration; a provider's sealed API key is a BLOB of its own, stored as
-- given.
--
-- llm_counters hold what budgets are checked against: a tenant's day
-- (scope 'tenant', id ''), an instance's day (scope 'instance') and a run
-- (scope 'run', day ''). llm_reservations are the estimates of calls in
-- flight, held in the counters until they are settled. llm_usage is the
-- settled calls of a tenant's instance on a day, to a model through a
-- provider.

CREATE TABLE llm_providers (
    tenant     TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    created_us INTEGER NOT NULL,
    updated_us INTEGER NOT NULL,
    sealed_key BLOB,
    body       BLOB    NOT NULL,
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID;

CREATE TABLE llm_routes (
    tenant     TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    created_us INTEGER NOT NULL,
    updated_us INTEGER NOT NULL,
    body       BLOB    NOT NULL,
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID;

CREATE TABLE llm_budgets (
    tenant       TEXT    NOT NULL,
    instance     TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    updated_us   INTEGER NOT NULL,
    daily_tokens INTEGER NOT NULL,
    daily_cost   INTEGER NOT NULL,
    run_tokens   INTEGER NOT NULL,
    run_cost     INTEGER NOT NULL,
    PRIMARY KEY (tenant, instance)
) WITHOUT ROWID;

CREATE TABLE llm_counters (
    tenant  TEXT    NOT NULL,
    scope   TEXT    NOT NULL,
    id      TEXT    NOT NULL,
    day     TEXT    NOT NULL,
    tokens  INTEGER NOT NULL,
    cost    INTEGER NOT NULL,
    last_us INTEGER NOT NULL,
    PRIMARY KEY (tenant, scope, id, day)
) WITHOUT ROWID;

CREATE INDEX llm_counters_last ON llm_counters (last_us);

CREATE TABLE llm_reservations (
    id       TEXT    NOT NULL PRIMARY KEY,
    tenant   TEXT    NOT NULL,
    instance TEXT    NOT NULL,
    run      TEXT    NOT NULL,
    day      TEXT    NOT NULL,
    tokens   INTEGER NOT NULL,
    cost     INTEGER NOT NULL,
    at_us    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX llm_reservations_at ON llm_reservations (at_us);

CREATE TABLE llm_usage (
    tenant        TEXT    NOT NULL,
    day           TEXT    NOT NULL,
    instance      TEXT    NOT NULL,
    model         TEXT    NOT NULL,
    provider      TEXT    NOT NULL,
    calls         INTEGER NOT NULL,
    failed        INTEGER NOT NULL,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost          INTEGER NOT NULL,
    PRIMARY KEY (tenant, day, instance, model, provider)
) WITHOUT ROWID;
