"""LangGraph with its SQLite (SqliteSaver) or PostgreSQL (PostgresSaver) checkpointer.

Usage: python langgraph_bench.py sqlite|postgres

Figures (per round):
- step: µs per super-step of a graph whose one node does trivial work, looping N times,
  with durability="sync" (each step durable before the next) and the default "async";
  commits per step. SQLite: COMMIT statements seen by the connection's trace callback.
  PostgreSQL: write commits = transaction ids assigned (only writing transactions get one);
  transactions = pg_stat_database.xact_commit of a database used by nothing else (every
  autocommitted statement counts, reads too).
- react (SQLite only): ms per tool iteration of the prebuilt ReAct agent driven by a scripted
  chat model (no network): K tool calls, then a reply.
- bytes: bytes stored after N = 10, 100, 500 steps of a graph that appends one 100-byte
  message per step to its history, and the bytes the last step added.
- resume: ms from graph.invoke(Command(resume=...)) to the node after interrupt() running;
  and how many times the code before interrupt() ran (1 would mean it is not re-run).
"""

from __future__ import annotations

import operator
import os
import sqlite3
import sys
import uuid
import warnings
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from common import (MEASURING_XACTS, emit, median, ms, now, pg_commits, pg_database, pg_next_xid, pg_url,
                    scratch_dir, skip, us)

STEPS = int(os.environ.get("PEERS_LG_STEPS", "100"))
REACT_ITERATIONS = int(os.environ.get("PEERS_LG_REACT_ITERATIONS", "20"))
RESUMES = int(os.environ.get("PEERS_LG_RESUMES", "20"))
HISTORY_SIZES = (10, 100, 500)
MESSAGE = "m" * 100


# --- graphs -------------------------------------------------------------------------------

class Counter(TypedDict):
    n: int


def loop_graph(saver, steps: int):
    def step(state: Counter) -> dict:
        return {"n": state["n"] + 1}

    def route(state: Counter) -> str:
        return "step" if state["n"] < steps else END

    g = StateGraph(Counter)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", route, ["step", END])
    return g.compile(checkpointer=saver)


class History(TypedDict):
    n: int
    messages: Annotated[list[str], operator.add]


def history_graph(saver, steps: int):
    def step(state: History) -> dict:
        return {"n": state["n"] + 1, "messages": [MESSAGE]}

    def route(state: History) -> str:
        return "step" if state["n"] < steps else END

    g = StateGraph(History)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", route, ["step", END])
    return g.compile(checkpointer=saver)


class Question(TypedDict):
    answer: str


class ResumeProbe:
    """Counts runs of the code before interrupt() and stamps when the next node starts."""

    def __init__(self) -> None:
        self.before_interrupt = 0
        self.next_node_started = 0.0

    def graph(self, saver):
        def ask(state: Question) -> dict:
            self.before_interrupt += 1
            answer = interrupt("go on?")
            return {"answer": answer}

        def after(state: Question) -> dict:
            self.next_node_started = now()
            return {}

        g = StateGraph(Question)
        g.add_node("ask", ask)
        g.add_node("after", after)
        g.add_edge(START, "ask")
        g.add_edge("ask", "after")
        g.add_edge("after", END)
        return g.compile(checkpointer=saver)


class ScriptedModel(BaseChatModel):
    """A chat model with no network: asks for `iterations` echo calls, then replies."""

    iterations: int = 20

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedModel":
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        done = sum(1 for m in messages if isinstance(m, AIMessage))
        if done < self.iterations:
            msg = AIMessage(content="", tool_calls=[
                {"name": "echo", "args": {"text": f"call {done}"}, "id": f"call_{done}"}])
        else:
            msg = AIMessage(content="done")
        return ChatResult(generations=[ChatGeneration(message=msg)])


@tool
def echo(text: str) -> str:
    """Returns its input."""
    return text


def config(recursion: int = 10_000) -> dict:
    return {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": recursion}


# --- measurements shared by both savers ----------------------------------------------------

def measure_steps(saver, durability: str) -> float:
    graph = loop_graph(saver, STEPS)
    graph.invoke({"n": 0}, config(), durability="sync")  # warm-up: imports, statements
    t0 = now()
    out = graph.invoke({"n": 0}, config(), durability=durability)
    elapsed = now() - t0
    assert out["n"] == STEPS, out
    return elapsed / STEPS


def measure_resumes(saver) -> tuple[list[float], list[int]]:
    probe = ResumeProbe()
    graph = probe.graph(saver)
    latencies, before_counts = [], []
    for i in range(RESUMES + 1):
        cfg = config()
        probe.before_interrupt = 0
        graph.invoke({"answer": ""}, cfg, durability="sync")
        assert graph.get_state(cfg).next == ("ask",)
        t0 = now()
        out = graph.invoke(Command(resume="yes"), cfg, durability="sync")
        assert out["answer"] == "yes", out
        if i > 0:  # the first one warms up
            latencies.append(probe.next_node_started - t0)
            before_counts.append(probe.before_interrupt)
    return latencies, before_counts


def emit_resumes(engine: str, saver) -> None:
    latencies, before_counts = measure_resumes(saver)
    emit(f"langgraph.{engine}.resume_ms", ms(median(latencies)), "ms", samples=len(latencies))
    emit(f"langgraph.{engine}.code_before_interrupt_runs", max(before_counts), "runs",
         min=min(before_counts))


# --- SQLite -------------------------------------------------------------------------------

def sqlite_saver(path: str):
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    commits = [0]

    def trace(statement: str) -> None:
        if statement.lstrip().upper().startswith("COMMIT"):
            commits[0] += 1

    conn.set_trace_callback(trace)
    saver = SqliteSaver(conn)
    saver.setup()
    return conn, saver, commits


def sqlite_bytes(conn: sqlite3.Connection) -> int:
    (checkpoints,) = conn.execute(
        "SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints").fetchone()
    (writes,) = conn.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes").fetchone()
    return checkpoints + writes


def run_sqlite() -> None:
    with scratch_dir() as d:
        conn, saver, commits = sqlite_saver(os.path.join(d, "lg.sqlite"))
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
        for durability in ("sync", "async"):
            before = commits[0]
            per_step = measure_steps(saver, durability)
            # Both invokes (warm-up and measured) of STEPS steps counted: divide by both.
            per_step_commits = (commits[0] - before) / (2 * STEPS)
            emit(f"langgraph.sqlite.step_us.{durability}", us(per_step), "us",
                 steps=STEPS, write_commits_per_step=round(per_step_commits, 2),
                 journal_mode=journal, synchronous=synchronous)

        model = ScriptedModel(iterations=REACT_ITERATIONS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from langgraph.prebuilt import create_react_agent

            agent = create_react_agent(model, [echo], checkpointer=saver)
        agent.invoke({"messages": [("user", "go")]}, config())  # warm-up
        t0 = now()
        out = agent.invoke({"messages": [("user", "go")]}, config())
        elapsed = now() - t0
        assert out["messages"][-1].content == "done"
        assert sum(1 for m in out["messages"] if m.type == "tool") == REACT_ITERATIONS
        emit("langgraph.sqlite.react_iteration_ms", ms(elapsed / REACT_ITERATIONS), "ms",
             iterations=REACT_ITERATIONS)

        emit_resumes("sqlite", saver)
        conn.close()

        for n in HISTORY_SIZES:
            conn, saver, _ = sqlite_saver(os.path.join(d, f"history-{n}.sqlite"))
            graph = history_graph(saver, n)
            cfg = config()
            graph.invoke({"n": 0, "messages": []}, cfg, durability="sync")
            total = sqlite_bytes(conn)
            # The last step: its checkpoint row and its writes.
            (last,) = conn.execute(
                "SELECT LENGTH(checkpoint) + LENGTH(metadata) FROM checkpoints "
                "ORDER BY checkpoint_id DESC LIMIT 1").fetchone()
            (file_bytes,) = conn.execute(
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
            ).fetchone()
            emit(f"langgraph.sqlite.bytes_after_{n}_steps", total, "bytes",
                 per_step_avg=round(total / n), last_checkpoint_row=last, file_bytes=file_bytes)
            conn.close()


# --- PostgreSQL ---------------------------------------------------------------------------

def pg_bytes(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        (total,) = conn.execute(
            "SELECT (SELECT COALESCE(SUM(octet_length(checkpoint::text) + octet_length(metadata::text)), 0) FROM checkpoints)"
            " + (SELECT COALESCE(SUM(octet_length(blob)), 0) FROM checkpoint_blobs)"
            " + (SELECT COALESCE(SUM(octet_length(blob)), 0) FROM checkpoint_writes)").fetchone()
        return int(total)


def run_postgres() -> None:
    if not pg_url():
        skip("langgraph.postgres", "PG_URL is not set")
        return
    from langgraph.checkpoint.postgres import PostgresSaver

    for durability in ("sync", "async"):
        with pg_database("lg_bench") as url:
            with PostgresSaver.from_conn_string(url) as saver:
                saver.setup()
            before, xid_before = pg_commits(url), pg_next_xid(url)
            with PostgresSaver.from_conn_string(url) as saver:
                per_step = measure_steps(saver, durability)
            xid_after, after = pg_next_xid(url), pg_commits(url)
            # Both invokes (warm-up and measured) of STEPS steps counted: divide by both.
            emit(f"langgraph.postgres.step_us.{durability}", us(per_step), "us", steps=STEPS,
                 write_commits_per_step=round((xid_after - xid_before) / (2 * STEPS), 2),
                 transactions_per_step=round((after - before - MEASURING_XACTS) / (2 * STEPS), 2))

    with pg_database("lg_bench") as url:
        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            emit_resumes("postgres", saver)

    for n in HISTORY_SIZES:
        with pg_database("lg_bench") as url:
            with PostgresSaver.from_conn_string(url) as saver:
                saver.setup()
                history_graph(saver, n).invoke({"n": 0, "messages": []}, config(), durability="sync")
            total = pg_bytes(url)
            emit(f"langgraph.postgres.bytes_after_{n}_steps", total, "bytes",
                 per_step_avg=round(total / n))


if __name__ == "__main__":
    engine = sys.argv[1] if len(sys.argv) > 1 else "sqlite"
    {"sqlite": run_sqlite, "postgres": run_postgres}[engine]()
