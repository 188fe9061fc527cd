-- registry_version counts changes to registry_agents, so a reader (on any
-- replica) can tell whether a copy of the records it holds is still
-- current. The trigger bumps it in the transaction that changes a record.
CREATE TABLE registry_version (
    id      integer NOT NULL PRIMARY KEY CHECK (id = 1),
    version bigint  NOT NULL
);
INSERT INTO registry_version (id, version) VALUES (1, 0);

CREATE FUNCTION registry_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE registry_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END;
$$;

CREATE TRIGGER registry_agents_changed AFTER INSERT OR UPDATE OR DELETE ON registry_agents
    FOR EACH STATEMENT EXECUTE FUNCTION registry_bump_version();
