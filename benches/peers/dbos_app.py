"""The DBOS workflows the benchmarks run, shared by the benchmark and its child processes."""

from __future__ import annotations

import os
import sys
import time

from dbos import DBOS

from common import now


class Probe:
    resumed_at = 0.0


@DBOS.step()
def trivial(i: int) -> int:
    return i


@DBOS.workflow()
def steps_workflow(n: int) -> int:
    for i in range(n):
        trivial(i)
    return n


@DBOS.workflow()
def waiting_workflow() -> str:
    message = DBOS.recv("answer", timeout_seconds=120)
    Probe.resumed_at = now()
    return message


# --- the recovery workflow: step one, then step two (where the crash happens) ---------------

LAUNCH_STARTED = [0.0]


@DBOS.step()
def step_one() -> str:
    print("STEP1_RAN", flush=True)
    return "one"


@DBOS.step()
def step_two() -> str:
    if os.environ.get("PEERS_DBOS_MODE") == "crash":
        print("IN_STEP2", flush=True)
        time.sleep(600)
    print(f"RESUMED {now() - LAUNCH_STARTED[0]:.6f}", flush=True)
    return "two"


@DBOS.workflow()
def crash_workflow() -> str:
    return step_one() + step_two()


def config(url: str) -> dict:
    return {"name": "harnessx-peers", "system_database_url": url, "log_level": "WARNING"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
