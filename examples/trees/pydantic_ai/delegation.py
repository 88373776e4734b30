"""Agent delegation written the way Pydantic AI's docs write it: a tool of the planner awaits
another agent's run. The docs pass the tool's usage on (`usage=ctx.usage`) so that the
delegate's requests count in the planner's usage; `careless_planner` is the same app with the
common mistake, the usage not passed. Each delegate run has its own limit, as the app sets it.

In production both agents run on a real model (`model='openai:gpt-5.2'` at run time);
haltproof gives each a scripted FunctionModel, so nothing here needs a network or an API key.
"""
from pydantic_ai import Agent, RunContext
from pydantic_ai.usage import UsageLimits

RESEARCH_LIMITS = UsageLimits(request_limit=3)

research_agent = Agent(instructions='Search until you can summarise what is known.')


@research_agent.tool_plain
def web_search(query: str) -> str:
    """Search the web."""
    return f'Three articles about {query}.'


planner = Agent(instructions='Plan the answer; delegate research to the research agent.')


@planner.tool
async def research(ctx: RunContext[None], question: str) -> str:
    """Research a question with the research agent."""
    result = await research_agent.run(question, usage=ctx.usage, usage_limits=RESEARCH_LIMITS)
    return result.output


careless_planner = Agent(instructions='Plan the answer; delegate research to the research agent.')


@careless_planner.tool
async def research_alone(ctx: RunContext[None], question: str) -> str:
    """Research a question with the research agent (its usage not passed on)."""
    result = await research_agent.run(question, usage_limits=RESEARCH_LIMITS)
    return result.output
