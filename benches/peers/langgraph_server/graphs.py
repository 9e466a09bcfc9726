"""The graphs served by `langgraph dev` for harnessx-server's load bench (benches/load.rs).

Both mirror the scripted agents the bench gives harnessx, with no LLM: plain Python nodes.

- `replier`: one node that replies "hello" (harnessx: `script = [{ reply = "hello" }]`).
- `asker`: one node that asks "Proceed?" through `interrupt()`, then replies with what it
  was given on resume (harnessx: `script = [{ ask = "Proceed?" }, { reply = "saw: {result}" }]`).
"""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    input: str
    reply: str


def reply_node(state: State) -> dict:
    return {"reply": "hello"}


def ask_node(state: State) -> dict:
    answer = interrupt("Proceed?")
    return {"reply": f"saw: {answer}"}


def _one_node(name: str, node) -> StateGraph:
    g = StateGraph(State)
    g.add_node(name, node)
    g.add_edge(START, name)
    g.add_edge(name, END)
    return g


# The server supplies the checkpointer (in memory under `langgraph dev`).
replier = _one_node("reply", reply_node).compile()
asker = _one_node("ask", ask_node).compile()
