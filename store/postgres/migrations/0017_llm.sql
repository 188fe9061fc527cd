-- The LLM gateway's store (llm.Store): providers and model routes, by
-- tenant ('' for the platform's) and name; budgets, by tenant and
-- instance ('' for the tenant's own); the usage ledger.
--
-- Times are microseconds since the Unix epoch and costs nanodollars, as
-- bigint. A provider's and a route's key, version and times are columns,
-- the rest their JSON encoding in body, so a field they gain needs no
-- migration; body and a provider's sealed API key are bytea stored as
-- given. COLLATE "C" keeps keys in byte order, as in the SQLite store,
-- whatever the database's collation.
--
-- llm_counters hold what budgets are checked against: a tenant's day
-- (scope 'tenant', id ''), an instance's day (scope 'instance') and a run
-- (scope 'run', day ''). A reservation increments them first, taking
-- their row locks in that order, and checks the budgets after, so that
-- concurrent reservations on any replica queue on the same rows and none
-- passes a limit. llm_reservations are the estimates of calls in flight,
-- held in the counters until they are settled. llm_usage is the settled
-- calls of a tenant's instance on a day, to a model through a provider.

CREATE TABLE llm_providers (
    tenant     text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    version    bigint NOT NULL,
    created_us bigint NOT NULL,
    updated_us bigint NOT NULL,
    sealed_key bytea,
    body       bytea NOT NULL,
    PRIMARY KEY (tenant, name)
);

CREATE TABLE llm_routes (
    tenant     text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    version    bigint NOT NULL,
    created_us bigint NOT NULL,
    updated_us bigint NOT NULL,
    body       bytea NOT NULL,
    PRIMARY KEY (tenant, name)
);

CREATE TABLE llm_budgets (
    tenant       text COLLATE "C" NOT NULL,
    instance     text COLLATE "C" NOT NULL,
    version      bigint NOT NULL,
    updated_us   bigint NOT NULL,
    daily_tokens bigint NOT NULL,
    daily_cost   bigint NOT NULL,
    run_tokens   bigint NOT NULL,
    run_cost     bigint NOT NULL,
    PRIMARY KEY (tenant, instance)
);

CREATE TABLE llm_counters (
    tenant  text COLLATE "C" NOT NULL,
    scope   text COLLATE "C" NOT NULL,
    id      text COLLATE "C" NOT NULL,
    day     text COLLATE "C" NOT NULL,
    tokens  bigint NOT NULL,
    cost    bigint NOT NULL,
    last_us bigint NOT NULL,
    PRIMARY KEY (tenant, scope, id, day)
);

CREATE INDEX llm_counters_last ON llm_counters (last_us);

CREATE TABLE llm_reservations (
    id       text COLLATE "C" NOT NULL PRIMARY KEY,
    tenant   text COLLATE "C" NOT NULL,
    instance text COLLATE "C" NOT NULL,
    run      text COLLATE "C" NOT NULL,
    day      text COLLATE "C" NOT NULL,
    tokens   bigint NOT NULL,
    cost     bigint NOT NULL,
    at_us    bigint NOT NULL
);

CREATE INDEX llm_reservations_at ON llm_reservations (at_us);

CREATE TABLE llm_usage (
    tenant        text COLLATE "C" NOT NULL,
    day           text COLLATE "C" NOT NULL,
    instance      text COLLATE "C" NOT NULL,
    model         text COLLATE "C" NOT NULL,
    provider      text COLLATE "C" NOT NULL,
    calls         bigint NOT NULL,
    failed        bigint NOT NULL,
    input_tokens  bigint NOT NULL,
    output_tokens bigint NOT NULL,
    cost          bigint NOT NULL,
    PRIMARY KEY (tenant, day, instance, model, provider)
);
