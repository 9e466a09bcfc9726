"""Shared helpers for the peer benchmarks: JSON output, timing, scratch databases."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

ROUND = int(os.environ.get("PEERS_ROUND", "0"))


def emit(figure: str, value: float, unit: str, **detail) -> None:
    """One measured figure of this round, as a JSON line on stdout."""
    line = {"figure": figure, "value": round(value, 3), "unit": unit, "round": ROUND}
    line.update(detail)
    print(json.dumps(line), flush=True)


def skip(figure: str, reason: str) -> None:
    """A figure that could not be measured here, and why."""
    print(json.dumps({"figure": figure, "skipped": reason, "round": ROUND}), flush=True)


def median(values):
    return statistics.median(values)


def us(seconds: float) -> float:
    return seconds * 1e6


def ms(seconds: float) -> float:
    return seconds * 1e3


def now() -> float:
    return time.perf_counter()


@contextlib.contextmanager
def scratch_dir():
    """A temporary directory for SQLite files, on the same disk as $TMPDIR."""
    with tempfile.TemporaryDirectory(prefix="harnessx-peers-") as d:
        yield d


def pg_url() -> str | None:
    return os.environ.get("PG_URL") or None


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@contextlib.contextmanager
def pg_database(prefix: str):
    """A fresh database on the PG_URL server for one workload, dropped afterwards. Yields its URL."""
    import psycopg

    base = pg_url()
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(base, name)
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# Transactions the counters themselves add between a `pg_commits` before a workload and one
# after it: the first reader's two statements and two `pg_next_xid` readers' one each.
MEASURING_XACTS = 4


def pg_commits(url: str) -> int:
    """Transactions committed in the database of `url` (pg_stat_database.xact_commit).

    Backends report their counts when they exit, so read this after the workload's
    connections are closed; the reading connection itself adds one.
    """
    import psycopg

    time.sleep(0.3)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
        return int(row[0])


def pg_next_xid(url: str) -> int:
    """The cluster's next transaction id. Only transactions that write get one, so the
    difference across a workload counts its write commits (and its aborts: none here)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        (xmax,) = conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()
        return int(xmax)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
