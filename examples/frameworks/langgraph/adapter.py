"""react.py's real graph bound to react_adapter.yaml: the model's two outcomes are the only glue."""
from langchain_core.messages import AIMessage
from react import build_graph

from haltproof.frameworks.langgraph import GraphAdapter

CALL = AIMessage("", tool_calls=[{"name": "search", "args": {"query": "haltproof"}, "id": "call_1"}])


class ReactAdapter(GraphAdapter):
    scripted = {"model": {"tool_call": CALL, "final": AIMessage("Here is the answer.")}}

    def graph(self, models):
        return build_graph(models["model"])

    def inputs(self, params):
        return {"messages": [("user", "What is haltproof?")]}
