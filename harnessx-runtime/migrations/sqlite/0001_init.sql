-- The first schema of the durable run store. One row per run; its journal (`steps`), its
-- outstanding input (`pending`) and its events are keyed by run and a per-run sequence, so
-- every write appends a few small rows and the run's history is never re-saved.

CREATE TABLE conversations (
    id         TEXT PRIMARY KEY,
    created_ms INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE runs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    agent           TEXT    NOT NULL,
    conversation    TEXT    NOT NULL REFERENCES conversations(id),
    input           TEXT    NOT NULL,
    idempotency_key TEXT    UNIQUE,
    state           TEXT    NOT NULL,
    owner           TEXT,
    lease_gen       INTEGER NOT NULL DEFAULT 0,
    lease_until_ms  INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    step_seq        INTEGER NOT NULL DEFAULT 0,
    event_seq       INTEGER NOT NULL DEFAULT 0,
    result          TEXT,
    error           TEXT,
    created_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL
);
CREATE INDEX runs_by_state ON runs(state, id);
CREATE INDEX runs_by_conversation ON runs(conversation, id);

-- The journal: model turns, calls started and finished, questions asked, replies, cancels.
CREATE TABLE steps (
    run_id INTEGER NOT NULL,
    seq    INTEGER NOT NULL,
    kind   TEXT    NOT NULL,
    turn   INTEGER NOT NULL,
    idx    INTEGER NOT NULL,
    body   TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- What a waiting run waits for; a row is gone once its reply is journaled and the run re-queued.
CREATE TABLE pending (
    run_id      INTEGER NOT NULL,
    turn        INTEGER NOT NULL,
    idx         INTEGER NOT NULL,
    body        TEXT    NOT NULL,
    asked_ms    INTEGER NOT NULL,
    deadline_ms INTEGER,
    reply       TEXT,
    PRIMARY KEY (run_id, turn, idx)
) WITHOUT ROWID;
CREATE INDEX pending_by_deadline ON pending(deadline_ms) WHERE reply IS NULL;

CREATE TABLE events (
    run_id INTEGER NOT NULL,
    seq    INTEGER NOT NULL,
    body   TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- A conversation's transcript: every completed run's messages, in order.
CREATE TABLE messages (
    conversation TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    run_id       INTEGER NOT NULL,
    body         TEXT    NOT NULL,
    PRIMARY KEY (conversation, seq)
) WITHOUT ROWID;

-- Tools allowed for the rest of a conversation ("allow for the conversation").
CREATE TABLE grants (
    conversation TEXT NOT NULL,
    tool         TEXT NOT NULL,
    PRIMARY KEY (conversation, tool)
) WITHOUT ROWID;
