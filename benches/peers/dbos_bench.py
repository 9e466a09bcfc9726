"""DBOS Transact on SQLite (its default system database) or PostgreSQL.

Usage: python dbos_bench.py sqlite|postgres

Figures (per round):
- step: µs per step of a workflow of N trivial steps (start_workflow → get_result, / N).
  Per step also: transactions committed and statements sent by DBOS's SQLAlchemy engine
  (reads included; each statement is at least one round trip); on PostgreSQL, write commits
  (transaction ids assigned: only writing transactions get one) and the server's
  pg_stat_database.xact_commit (every autocommitted statement counts).
- send: ms from DBOS.send to the workflow going on after DBOS.recv returns.
- recovery: a child process runs a two-step workflow and is killed with SIGKILL inside step
  two; a new process launches DBOS on the same database; ms from the start of DBOS.launch()
  to step two running again (and whether step one ran again: it must not).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid

import sqlalchemy as sa
from dbos import DBOS

import dbos_app
from common import (MEASURING_XACTS, emit, median, ms, now, pg_commits, pg_database, pg_next_xid, pg_url,
                    scratch_dir, skip, us)

STEPS = int(os.environ.get("PEERS_DBOS_STEPS", "50"))
SENDS = int(os.environ.get("PEERS_DBOS_SENDS", "5"))
HERE = os.path.dirname(os.path.abspath(__file__))


def launch(url: str) -> None:
    DBOS(config=dbos_app.config(url))
    DBOS.launch()


def count_client_work():
    """Counts, on DBOS's own SQLAlchemy engine, transactions committed and statements sent."""
    import dbos._dbos as core

    counts = {"commits": 0, "statements": 0}

    def on_commit(conn) -> None:
        counts["commits"] += 1

    def on_execute(conn, cursor, statement, parameters, context, executemany) -> None:
        counts["statements"] += 1

    engine = core._dbos_global_instance._sys_db.engine
    sa.event.listen(engine, "commit", on_commit)
    sa.event.listen(engine, "before_cursor_execute", on_execute)
    return counts


def measure_steps() -> float:
    DBOS.start_workflow(dbos_app.steps_workflow, 2).get_result()  # warm-up
    t0 = now()
    assert DBOS.start_workflow(dbos_app.steps_workflow, STEPS).get_result() == STEPS
    return (now() - t0) / STEPS


def measure_sends() -> list[float]:
    latencies = []
    for i in range(SENDS):
        handle = DBOS.start_workflow(dbos_app.waiting_workflow)
        # Let it block in recv; a random wait so the send lands at a random point of any poll.
        time.sleep(0.3 + random.random())
        t0 = now()
        DBOS.send(handle.get_workflow_id(), f"answer {i}", "answer")
        assert handle.get_result() == f"answer {i}"
        latencies.append(dbos_app.Probe.resumed_at - t0)
    return latencies


def read_line(proc: subprocess.Popen, prefix: str, timeout: float) -> tuple[str, list[str]]:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.strip())
        if line.startswith(prefix):
            return line.strip(), seen
    raise RuntimeError(f"child did not print {prefix!r}; it printed {seen!r}")


def measure_recovery(url: str) -> tuple[float, float, int]:
    """(ms from launch() to step two running again, ms launch() took, step one re-runs)."""
    workflow_id = f"crash-{uuid.uuid4().hex}"
    child = [sys.executable, os.path.join(HERE, "dbos_child.py"), url, workflow_id]
    env = dict(os.environ, PEERS_DBOS_MODE="crash")
    crashed = subprocess.Popen(child, env=env, stdout=subprocess.PIPE, text=True, cwd=HERE)
    try:
        read_line(crashed, "IN_STEP2", 60)
    finally:
        crashed.send_signal(signal.SIGKILL)
        crashed.wait()
    env = dict(os.environ, PEERS_DBOS_MODE="recover")
    recovered = subprocess.Popen(child, env=env, stdout=subprocess.PIPE, text=True, cwd=HERE)
    try:
        resumed, seen = read_line(recovered, "RESUMED", 60)
        result, more = read_line(recovered, "RESULT", 60)
        assert result == "RESULT onetwo", result
    finally:
        recovered.wait(30)
    launched = next(float(l.split()[1]) for l in seen + more if l.startswith("LAUNCHED"))
    step_one_reruns = sum(1 for l in seen + more if l == "STEP1_RAN")
    return float(resumed.split()[1]) * 1e3, launched * 1e3, step_one_reruns


def run(engine: str, url: str, pg: bool) -> None:
    launch(url)
    try:
        counts = count_client_work()
        if pg:
            xid_before, xacts_before = pg_next_xid(url), pg_commits(url)
        per_step = measure_steps()
        # Both workflows (warm-up of 2 steps and the measured one) counted.
        steps = STEPS + 2
        detail = {
            "steps": STEPS,
            "client_commits_per_step": round(counts["commits"] / steps, 2),
            "client_statements_per_step": round(counts["statements"] / steps, 2),
        }
        if not pg:
            import dbos._dbos as core

            with core._dbos_global_instance._sys_db.engine.connect() as conn:
                detail["journal_mode"] = conn.execute(sa.text("PRAGMA journal_mode")).scalar()
                detail["synchronous"] = conn.execute(sa.text("PRAGMA synchronous")).scalar()
        if pg:
            xid_after = pg_next_xid(url)
            DBOS.destroy()
            xacts_after = pg_commits(url)
            detail["write_commits_per_step"] = round((xid_after - xid_before) / steps, 2)
            detail["server_transactions_per_step"] = round((xacts_after - xacts_before - MEASURING_XACTS) / steps, 2)
        emit(f"dbos.{engine}.step_us", us(per_step), "us", **detail)
        DBOS.destroy()

        launch(url)
        latencies = measure_sends()
        emit(f"dbos.{engine}.send_to_resume_ms", ms(median(latencies)), "ms",
             samples=len(latencies), min=round(ms(min(latencies)), 3),
             max=round(ms(max(latencies)), 3))
    finally:
        DBOS.destroy()

    resumed_ms, launch_ms, reruns = measure_recovery(url)
    emit(f"dbos.{engine}.recovery_after_launch_ms", resumed_ms, "ms",
         launch_call_ms=round(launch_ms, 3), step_one_reruns=reruns)


def main() -> None:
    engine = sys.argv[1] if len(sys.argv) > 1 else "sqlite"
    if engine == "sqlite":
        with scratch_dir() as d:
            run("sqlite", f"sqlite:///{os.path.join(d, 'dbos.sqlite')}", pg=False)
    else:
        if not pg_url():
            skip("dbos.postgres", "PG_URL is not set")
            return
        with pg_database("dbos_bench") as url:
            run("postgres", url, pg=True)


if __name__ == "__main__":
    main()
