-- Schema 3: the platform's stored resources (agents today), each a chain of versions, and the
-- agent version each run started with.
--
-- `resources` holds one row a resource: its current version, whether it was deleted, and the
-- body the configuration file last seeded it with (so a changed file is told from an unchanged
-- one at the next start). `resource_versions` keeps every version: a run resumes with the
-- version it started with, whatever happened to the resource since.
CREATE TABLE resources (
    kind       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    deleted    INTEGER NOT NULL DEFAULT 0,
    seed       TEXT,
    updated_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
);
CREATE TABLE resource_versions (
    kind       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    body       TEXT    NOT NULL,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, name, version)
);
ALTER TABLE runs ADD COLUMN agent_version INTEGER;
