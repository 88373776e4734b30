"""react.py's graph in production, under the guard written from its proof (docs/how-to/guard.md).

    haltproof guard react.yaml -p recursion_limit=4 -o react_guard.json
    python guarded_react.py react_guard.json

The proof: with recursion_limit 4, the agent runs its tools at most twice. A run as deployed
(limit 4) passes the guard untouched. A deployment that drifted (the limit raised to 10) with a
model that keeps searching leaves what was proved: the guard stops it before the third search.
The model is scripted (langchain-core's GenericFakeChatModel), so nothing needs a network."""
import json
import sys

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from haltproof.frameworks.langgraph_guard import invoke_guarded
from haltproof.guard import Guard, GuardStopped
from react import build_graph

QUESTION = {"messages": [{"role": "user", "content": "What is haltproof?"}]}


def search(i: int) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "search", "args": {"query": "haltproof"}, "id": f"call_{i}"}])


def model(*answers: AIMessage) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(answers))


def main(path: str) -> int:
    guard = Guard.load(path, spec="react.yaml")
    out = invoke_guarded(build_graph(model(search(1), AIMessage("Here is the answer."))), QUESTION, guard,
                         {"recursion_limit": 4})
    print("as deployed:", out["messages"][-1].content)
    try:
        invoke_guarded(build_graph(model(*(search(i) for i in range(10)))), QUESTION, guard, {"recursion_limit": 10})
    except GuardStopped as stop:
        print("drifted:", stop)
        print(json.dumps(stop.decision.to_dict(), indent=2))
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
