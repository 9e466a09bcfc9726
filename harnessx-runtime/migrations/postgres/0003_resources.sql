-- Schema 3: the platform's stored resources (agents today), each a chain of versions, and the
-- agent version each run started with.
--
-- `resources` holds one row a resource: its current version, whether it was deleted, and the
-- body the configuration file last seeded it with (so a changed file is told from an unchanged
-- one at the next start). `resource_versions` keeps every version: a run resumes with the
-- version it started with, whatever happened to the resource since.
CREATE TABLE resources (
    kind       text    NOT NULL,
    name       text    NOT NULL,
    version    bigint  NOT NULL,
    deleted    boolean NOT NULL DEFAULT false,
    seed       text,
    updated_ms bigint  NOT NULL,
    PRIMARY KEY (kind, name)
);
CREATE TABLE resource_versions (
    kind       text    NOT NULL,
    name       text    NOT NULL,
    version    bigint  NOT NULL,
    body       text    NOT NULL,
    created_ms bigint  NOT NULL,
    PRIMARY KEY (kind, name, version)
);
ALTER TABLE runs ADD COLUMN agent_version bigint;
