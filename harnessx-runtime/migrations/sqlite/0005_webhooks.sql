-- Schema 5: the webhook outbox. A run's state change that a webhook subscribes to (waiting for
-- input, completed, failed, cancelled) writes a message here in the transaction that changes the
-- state, with one delivery per subscribed webhook; servers claim due deliveries under a lease,
-- send them, and log each attempt.
--
-- `webhook_messages` holds what is sent: its id (the `webhook-id` header, the same on every
-- attempt), its event type, the run and the event's data as JSON. `webhook_deliveries` is one
-- message to one webhook (a `webhook` resource, by name): `pending` until it is `delivered` or
-- `failed` for good, its attempts so far, when the next is due, and the lease of the server
-- sending it (`lease_gen` counts claims, so a server whose lease was taken over cannot record
-- its attempt). `webhook_attempts` is the delivery log.
CREATE TABLE webhook_messages (
    id         TEXT    PRIMARY KEY,
    event      TEXT    NOT NULL,
    run_id     INTEGER NOT NULL,
    data       TEXT    NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id      TEXT    NOT NULL REFERENCES webhook_messages (id),
    webhook         TEXT    NOT NULL,
    state           TEXT    NOT NULL DEFAULT 'pending',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms INTEGER,
    lease_owner     TEXT,
    lease_until_ms  INTEGER,
    lease_gen       INTEGER NOT NULL DEFAULT 0,
    created_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms)
    WHERE state = 'pending';
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook, id);
CREATE TABLE webhook_attempts (
    delivery_id     INTEGER NOT NULL REFERENCES webhook_deliveries (id),
    attempt         INTEGER NOT NULL,
    at_ms           INTEGER NOT NULL,
    duration_ms     INTEGER NOT NULL,
    status          INTEGER,
    error           TEXT,
    next_attempt_ms INTEGER,
    PRIMARY KEY (delivery_id, attempt)
);
