"""A research graph with a map-reduce fan-out, written the way LangGraph's docs write one: the
planner picks topics, a conditional edge sends each topic to `research` (`Send`: one task per
topic, all in one superstep), `write` and `cite` then run side by side, and `review` either
ends the run or sends it back to the planner with a `Command`.

`planner` and `review` call a model in production; here they are plain stand-ins, and the
declaration (fanout.yaml) scripts what they return, so nothing needs a network or a key.
"""
import operator
from typing import Annotated, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send
from typing_extensions import TypedDict


class State(TypedDict):
    question: str
    topics: list[str]
    notes: Annotated[list[str], operator.add]
    draft: str
    sources: str
    verdict: str


class Topic(TypedDict):
    topic: str


def planner(state: State) -> dict:
    return {"topics": [part.strip() for part in state["question"].split(" and ")]}


def fan_out(state: State) -> list[Send]:
    return [Send("research", {"topic": topic}) for topic in state["topics"]]


def research(state: Topic) -> dict:
    return {"notes": [f"notes on {state['topic']}"]}


def write(state: State) -> dict:
    return {"draft": "; ".join(state["notes"])}


def cite(state: State) -> dict:
    return {"sources": f"{len(state['notes'])} sources"}


def review(state: State) -> Command[Literal["planner", "__end__"]]:
    done = all(topic in state["draft"] for topic in state["topics"])
    return Command(goto=END if done else "planner", update={"verdict": "approved" if done else "revise"})


builder = StateGraph(State)
builder.add_node("planner", planner)
builder.add_node("research", research)
builder.add_node("write", write)
builder.add_node("cite", cite)
builder.add_node("review", review)
builder.add_edge(START, "planner")
builder.add_conditional_edges("planner", fan_out, ["research"])
builder.add_edge("research", "write")
builder.add_edge("research", "cite")
builder.add_edge(["write", "cite"], "review")
graph = builder.compile()
