"""A research graph written the way LangGraph's docs write one since 1.0: the search backend is
not a global but comes from the run's **runtime context** (`context_schema=Context`, read by
the nodes through `runtime: Runtime[Context]`), and a router reads the state's `search_count`.

`plan` turns the question into a query, `search` asks the backend, `route` searches again while
nothing was found (at most MAX_SEARCHES times), and `write` answers. In production:

    graph.invoke({"question": ...}, context=Context(search_backend=WebSearch(api_key=...)))

haltproof runs the same graph with a scripted backend, so nothing here needs a network or a key.
"""
import operator
from dataclasses import dataclass
from typing import Annotated, Protocol, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime


class SearchBackend(Protocol):
    def search(self, query: str) -> list[str]: ...


@dataclass
class Context:
    search_backend: SearchBackend


MAX_SEARCHES = 3


class State(TypedDict):
    question: str
    query: str
    notes: Annotated[list[str], operator.add]
    search_count: int
    answer: str


def plan(state: State) -> dict:
    return {"query": state["question"].rstrip("?"), "search_count": 0}


def search(state: State, runtime: Runtime[Context]) -> dict:
    found = runtime.context.search_backend.search(state["query"])
    return {"notes": found, "search_count": state["search_count"] + 1}


def route(state: State) -> str:
    if state["notes"] or state["search_count"] >= MAX_SEARCHES:
        return "write"
    return "search"


def write(state: State) -> dict:
    return {"answer": " ".join(state["notes"]) or "I found nothing."}


builder = StateGraph(State, context_schema=Context)
builder.add_node("plan", plan)
builder.add_node("search", search)
builder.add_node("write", write)
builder.add_edge(START, "plan")
builder.add_edge("plan", "search")
builder.add_conditional_edges("search", route, ["search", "write"])
builder.add_edge("write", END)
graph = builder.compile()
