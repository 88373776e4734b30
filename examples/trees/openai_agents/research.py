"""An orchestrator with agents used as tools, written the way the Agents SDK's docs write one
(`Agent.as_tool`, the "agents as tools" pattern): the orchestrator keeps the conversation and
calls a researcher and a writer as tools; each runs its own nested `Runner.run`.

The app runs it with `Runner.run(orchestrator, question, max_turns=2)` and the team reads that
as "a handful of model calls, 10 at the very most". research.yaml checks what the SDK allows."""

from agents import Agent, function_tool


@function_tool
def web_search(query: str) -> str:
    """Search the web for the query."""
    return f"Three articles about {query}."


@function_tool
def style_check(draft: str) -> str:
    """Check a draft against the house style."""
    return "Shorten the second sentence."


researcher = Agent(
    name="Researcher",
    instructions="Search the web until you can summarise what is known about the question.",
    tools=[web_search],
)

writer = Agent(
    name="Writer",
    instructions="Write the answer from the notes; check it against the house style first.",
    tools=[style_check],
)

orchestrator = Agent(
    name="Orchestrator",
    instructions="Answer the user's question: research it, then have the writer write the answer.",
    tools=[
        researcher.as_tool(
            tool_name="research",
            tool_description="Research a question and return notes.",
            max_turns=3,
        ),
        writer.as_tool(                     # no max_turns: the nested run gets the SDK's default
            tool_name="write",
            tool_description="Write the final answer from notes.",
        ),
    ],
)
