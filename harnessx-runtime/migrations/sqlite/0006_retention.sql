-- Schema 6: finished runs can be deleted after an age (retention), and listing runs by agent or
-- state stays a short index range however many runs the store holds.
--
-- `finished_ms` is when a run completed, failed or was cancelled (NULL while it goes on). The
-- store sets it as the run ends. Runs that ended before this migration get the best time the
-- rows tell: `updated_ms` is not kept up to date since schema 2, so this is mostly the run's
-- creation, which makes such a run look older than it is, never younger.
ALTER TABLE runs ADD COLUMN finished_ms INTEGER;
UPDATE runs SET finished_ms = MAX(created_ms, updated_ms)
    WHERE state IN ('completed', 'failed', 'cancelled');

-- Retention deletes the runs that finished before a cut-off, oldest first, a batch at a time:
-- without this index each batch would scan the whole runs table. Partial, so a running run's
-- writes never touch it.
CREATE INDEX runs_finished ON runs (finished_ms) WHERE finished_ms IS NOT NULL;
-- `GET /v2/runs?agent=...` pages newest first: (agent, id) reads a page as one descending
-- range from the cursor, instead of walking every newer run of other agents.
CREATE INDEX runs_by_agent ON runs (agent, id);
-- `GET /v2/runs?agent=...&state=...`: the same for both filters (a state such as
-- `waiting_input` may hold few of an agent's runs, so filtering (agent, id) would walk the
-- rest). `?state=...` alone uses `runs_by_state (state, id)` from schema 1.
CREATE INDEX runs_by_agent_state ON runs (agent, state, id);
-- Retention deletes a pruned run's webhook messages and their deliveries and attempts too:
-- these find them by run and by message (attempts by delivery use their primary key).
CREATE INDEX webhook_messages_by_run ON webhook_messages (run_id);
CREATE INDEX webhook_deliveries_by_message ON webhook_deliveries (message_id);
