-- Every server process sharing the database streams every run's events: each statement that
-- stores events notifies `harnessx_runs` with `events:<run id>:<highest seq>` for each run it
-- wrote, so a subscriber on another process reads the store at once instead of polling. The
-- notification is sent at commit, never for a transaction that rolls back.

CREATE FUNCTION harnessx_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('harnessx_runs', 'events:' || run_id || ':' || max(seq))
        FROM new_events GROUP BY run_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION harnessx_notify_events();
