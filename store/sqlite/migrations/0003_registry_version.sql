-- registry_version counts changes to registry_agents, so a reader can tell
-- whether a copy of the records it holds is still current. The triggers
-- bump it inside the statement that changes a record.
CREATE TABLE registry_version (
    id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO registry_version (id, version) VALUES (1, 0);

CREATE TRIGGER registry_agents_insert AFTER INSERT ON registry_agents
BEGIN UPDATE registry_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER registry_agents_update AFTER UPDATE ON registry_agents
BEGIN UPDATE registry_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER registry_agents_delete AFTER DELETE ON registry_agents
BEGIN UPDATE registry_version SET version = version + 1 WHERE id = 1; END;
