"""A supervisor routing to two workers, written the way LangGraph's multi-agent supervisor
tutorial writes one: the supervisor's model picks the next worker (or FINISH) with structured
output, and returns a `Command` that goes there; each worker answers and goes back to it.

`build_graph(supervisor, researcher, coder)` takes the three chat models (in production:
`ChatOpenAI(...)`); haltproof passes scripted ones, so nothing here needs a network or a key.
"""
from typing import Literal

from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict

members = ["researcher", "coder"]
system_prompt = (
    "You are a supervisor tasked with managing a conversation between the following workers: "
    f"{members}. Given the following user request, respond with the worker to act next. Each worker "
    "will perform a task and respond with their results and status. When finished, respond with FINISH."
)


class Router(TypedDict):
    """Worker to route to next. If no workers needed, route to FINISH."""

    next: Literal["researcher", "coder", "FINISH"]


class State(MessagesState):
    next: str


def build_graph(supervisor, researcher, coder):
    def supervisor_node(state: State) -> Command[Literal["researcher", "coder", "__end__"]]:
        messages = [{"role": "system", "content": system_prompt}] + state["messages"]
        response = supervisor.with_structured_output(Router).invoke(messages)
        goto = response["next"]
        if goto == "FINISH":
            goto = END
        return Command(goto=goto, update={"next": goto})

    def research_node(state: State) -> Command[Literal["supervisor"]]:
        result = researcher.invoke(state["messages"])
        return Command(update={"messages": [HumanMessage(content=result.content, name="researcher")]},
                       goto="supervisor")

    def code_node(state: State) -> Command[Literal["supervisor"]]:
        result = coder.invoke(state["messages"])
        return Command(update={"messages": [HumanMessage(content=result.content, name="coder")]},
                       goto="supervisor")

    builder = StateGraph(State)
    builder.add_edge(START, "supervisor")
    builder.add_node("supervisor", supervisor_node)
    builder.add_node("researcher", research_node)
    builder.add_node("coder", code_node)
    return builder.compile()
