-- Schema 2: a run's journal steps are stored on the rows of the events written in the same
-- commit, so writing a step touches one b-tree — usually one page — where schema 1 touched
-- three (the run's row, rewritten for its sequence numbers, a `steps` page and an `events`
-- page). Each of those pages is checksummed and appended to the write-ahead log at every commit.
-- A step written with no event gets a row of its own whose body is JSON `null` (event readers
-- skip it).
--
-- Sequence numbers now follow the run's last event; `runs.step_seq`, `runs.event_seq` and
-- `runs.updated_ms` are no longer maintained. Journals written under schema 1 stay in
-- `steps_v1` and precede every step stored with an event; the `steps` view reads both in
-- journal order (`era`, then `seq`).
ALTER TABLE steps RENAME TO steps_v1;
ALTER TABLE events ADD COLUMN step TEXT;
ALTER TABLE events ADD COLUMN kind TEXT;
ALTER TABLE events ADD COLUMN turn INTEGER;
ALTER TABLE events ADD COLUMN idx INTEGER;
CREATE VIEW steps (run_id, era, seq, kind, turn, idx, body) AS
    SELECT run_id, 1, seq, kind, turn, idx, body FROM steps_v1
    UNION ALL
    SELECT run_id, 2, seq, kind, turn, idx, step FROM events WHERE step IS NOT NULL;
