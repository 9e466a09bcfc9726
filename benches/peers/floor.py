"""The floor: one durable one-row INSERT + COMMIT.

SQLite (Python's sqlite3, WAL mode): median per-commit time with synchronous=FULL and NORMAL.
PostgreSQL (when PG_URL is set): median time of one autocommitted one-row INSERT, a round trip
and a durable commit (synchronous_commit as the server has it).
"""

from __future__ import annotations

import os
import sqlite3

from common import emit, median, now, pg_database, pg_url, scratch_dir, skip, us

COMMITS = int(os.environ.get("PEERS_FLOOR_COMMITS", "200"))


def commit_times(path: str, synchronous: str) -> list[float]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)")
    body = b"x" * 100
    times = []
    for _ in range(COMMITS):
        t0 = now()
        conn.execute("BEGIN")
        conn.execute("INSERT INTO t (body) VALUES (?)", (body,))
        conn.execute("COMMIT")
        times.append(now() - t0)
    conn.close()
    return times


def pg_commit_times(url: str) -> tuple[list[float], str, str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id BIGSERIAL PRIMARY KEY, body BYTEA)")
        (fsync,) = conn.execute("SHOW fsync").fetchone()
        (sync_commit,) = conn.execute("SHOW synchronous_commit").fetchone()
        body = b"x" * 100
        times = []
        for _ in range(COMMITS):
            t0 = now()
            conn.execute("INSERT INTO t (body) VALUES (%s)", (body,))
            times.append(now() - t0)
    return times, fsync, sync_commit


def main() -> None:
    with scratch_dir() as d:
        for sync in ("FULL", "NORMAL"):
            times = commit_times(os.path.join(d, f"floor-{sync}.db"), sync)
            emit(f"floor.sqlite_commit.{sync.lower()}", us(median(times)), "us",
                 samples=len(times))
    if not pg_url():
        skip("floor.postgres_commit", "PG_URL is not set")
        return
    with pg_database("floor") as url:
        times, fsync, sync_commit = pg_commit_times(url)
        emit("floor.postgres_commit", us(median(times)), "us", samples=len(times),
             fsync=fsync, synchronous_commit=sync_commit)


if __name__ == "__main__":
    main()
