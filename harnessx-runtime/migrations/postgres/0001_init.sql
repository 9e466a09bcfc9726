-- The first schema of the PostgreSQL run store: the same tables as SQLite's, keyed the same way,
-- plus `last_write` (the token of the last transaction that touched a run, so a commit whose
-- acknowledgement was lost with the connection can be told apart from one that never happened).

CREATE TABLE conversations (
    id         text   PRIMARY KEY,
    created_ms bigint NOT NULL
);

CREATE TABLE runs (
    id               bigserial PRIMARY KEY,
    agent            text    NOT NULL,
    conversation     text    NOT NULL REFERENCES conversations(id),
    input            text    NOT NULL,
    idempotency_key  text    UNIQUE,
    state            text    NOT NULL,
    owner            text,
    lease_gen        bigint  NOT NULL DEFAULT 0,
    lease_until_ms   bigint,
    cancel_requested boolean NOT NULL DEFAULT false,
    step_seq         bigint  NOT NULL DEFAULT 0,
    event_seq        bigint  NOT NULL DEFAULT 0,
    result           text,
    error            text,
    last_write       bigint,
    created_ms       bigint  NOT NULL,
    updated_ms       bigint  NOT NULL
) WITH (fillfactor = 80);
-- Partial indexes on `state` only: a step's update touches no indexed column, so it stays HOT.
CREATE INDEX runs_queued ON runs (id) WHERE state = 'queued';
CREATE INDEX runs_leased ON runs (lease_until_ms) WHERE state = 'running';
CREATE INDEX runs_by_owner ON runs (owner) WHERE state = 'running';
CREATE INDEX runs_by_conversation ON runs (conversation, id);

CREATE TABLE steps (
    run_id bigint  NOT NULL,
    seq    bigint  NOT NULL,
    kind   text    NOT NULL,
    turn   integer NOT NULL,
    idx    integer NOT NULL,
    body   text    NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE pending (
    run_id      bigint  NOT NULL,
    turn        integer NOT NULL,
    idx         integer NOT NULL,
    body        text    NOT NULL,
    asked_ms    bigint  NOT NULL,
    deadline_ms bigint,
    reply       text,
    PRIMARY KEY (run_id, turn, idx)
);
CREATE INDEX pending_by_deadline ON pending (deadline_ms) WHERE reply IS NULL;

CREATE TABLE events (
    run_id bigint NOT NULL,
    seq    bigint NOT NULL,
    body   text   NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE messages (
    conversation text   NOT NULL,
    seq          bigint NOT NULL,
    run_id       bigint NOT NULL,
    body         text   NOT NULL,
    PRIMARY KEY (conversation, seq)
);

CREATE TABLE grants (
    conversation text NOT NULL,
    tool         text NOT NULL,
    PRIMARY KEY (conversation, tool)
);

-- The server's clock in ms since the Unix epoch: leases are set and checked by one clock.
CREATE FUNCTION harnessx_now_ms() RETURNS bigint LANGUAGE sql VOLATILE
    AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;
