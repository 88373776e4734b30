"""A supervisor with two subgraphs, written the way LangGraph's docs write subgraphs: the
research agent is a compiled graph **added as a node** (it shares the parent's `messages`), and
the writer is a compiled graph with a state of its own, **invoked inside a node function**
(`writer_graph.invoke(...)`, its output turned back into the parent's state).

`build_graph(supervisor, researcher, writer)` takes the three chat models (in production:
`init_chat_model(...)`, the researcher's with `.bind_tools([search])`); haltproof passes
scripted ones. The app runs it with `graph.invoke(..., {"recursion_limit": 6})` and the team
reads that as "at most 6 steps, so at most 6 model calls". team.yaml checks what LangGraph allows.
"""
from typing import TypedDict

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"3 results for {query}"


class Draft(TypedDict):
    notes: str
    text: str


def build_graph(supervisor, researcher, writer):
    # the research subgraph: a ReAct agent over the parent's messages
    def research_agent(state: MessagesState) -> dict:
        return {"messages": [researcher.invoke(state["messages"])]}

    research = StateGraph(MessagesState)
    research.add_node("agent", research_agent)
    research.add_node("tools", ToolNode([search]))
    research.add_edge(START, "agent")
    research.add_conditional_edges("agent", tools_condition)
    research.add_edge("tools", "agent")
    research_graph = research.compile()

    # the writing subgraph: drafts until the writer says the text is final
    def draft(state: Draft) -> dict:
        return {"text": writer.invoke(f"Write from: {state['notes']}\nLast draft: {state['text']}").content}

    def reviewed(state: Draft) -> str:
        return END if state["text"].startswith("FINAL") else "draft"

    writing = StateGraph(Draft)
    writing.add_node("draft", draft)
    writing.add_edge(START, "draft")
    writing.add_conditional_edges("draft", reviewed, ["draft", END])
    writer_graph = writing.compile()

    # the parent: the supervisor sends the work to a subgraph, or answers
    def supervise(state: MessagesState) -> dict:
        return {"messages": [supervisor.invoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        return {"research": "research", "write": "write"}.get(state["messages"][-1].content, END)

    def write(state: MessagesState) -> dict:
        done = writer_graph.invoke({"notes": state["messages"][-2].content, "text": ""})
        return {"messages": [AIMessage(done["text"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("supervisor", supervise)
    builder.add_node("research", research_graph)
    builder.add_node("write", write)
    builder.add_edge(START, "supervisor")
    builder.add_conditional_edges("supervisor", route, ["research", "write", END])
    builder.add_edge("research", "supervisor")
    builder.add_edge("write", "supervisor")
    return builder.compile()
