"""A ReAct agent written the way LangGraph's docs write one: an `agent` node calling a chat
model, a `tools` node (LangGraph's prebuilt ToolNode) and `tools_condition` routing between them.

`build_graph(model)` takes the chat model (in production: `ChatOpenAI(...).bind_tools([search])`);
haltproof passes a scripted one, so nothing here needs a network or an API key.
"""
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"3 results for {query}"


def build_graph(model):
    def agent(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([search]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()
