-- Schema 6: finished runs can be deleted after an age (retention), and listing runs by agent or
-- state stays a short index range however many runs the store holds.
--
-- `finished_ms` is when a run completed, failed or was cancelled (NULL while it goes on), set by
-- the trigger below whichever server ends the run: during a rolling upgrade, servers of the
-- release before (which know nothing of the column) keep ending runs, and those runs must age
-- like the others. Runs that ended before this migration take `updated_ms`, which every write
-- to a run sets.
ALTER TABLE runs ADD COLUMN finished_ms bigint;
UPDATE runs SET finished_ms = updated_ms WHERE state IN ('completed', 'failed', 'cancelled');

CREATE FUNCTION harnessx_run_finished() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.finished_ms := harnessx_now_ms();
    RETURN NEW;
END
$$;
-- `UPDATE OF state`: a journal step's update sets no state, so it never fires the trigger.
CREATE TRIGGER runs_finished_at BEFORE UPDATE OF state ON runs FOR EACH ROW
    WHEN (NEW.state IN ('completed', 'failed', 'cancelled') AND NEW.finished_ms IS NULL)
    EXECUTE FUNCTION harnessx_run_finished();

-- Retention deletes the runs that finished before a cut-off, oldest first, a batch at a time:
-- without this index each batch would scan the whole runs table. Partial, so a running run's
-- writes never touch it.
CREATE INDEX runs_finished ON runs (finished_ms) WHERE finished_ms IS NOT NULL;
-- `GET /v2/runs?state=...` pages newest first: (state, id) reads a page as one descending range
-- from the cursor. Schema 1 only indexed queued and running runs, for the workers.
CREATE INDEX runs_by_state ON runs (state, id);
-- `GET /v2/runs?agent=...`: the same by agent, instead of walking every newer run of other
-- agents.
CREATE INDEX runs_by_agent ON runs (agent, id);
-- `GET /v2/runs?agent=...&state=...`: both filters (a state such as `waiting_input` may hold
-- few of an agent's runs, so filtering (agent, id) would walk the rest).
CREATE INDEX runs_by_agent_state ON runs (agent, state, id);
-- Retention deletes a pruned run's webhook messages and their deliveries and attempts too:
-- these find them by run and by message (attempts by delivery use their primary key).
CREATE INDEX webhook_messages_by_run ON webhook_messages (run_id);
CREATE INDEX webhook_deliveries_by_message ON webhook_deliveries (message_id);
