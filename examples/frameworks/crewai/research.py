"""A sequential research crew, written the way CrewAI's docs write one.

A researcher searches the web and reports its findings; a writer turns them into an article
that must pass a guardrail (a title line) before the crew accepts it. In production the run
is `crew.kickoff(inputs={"topic": "AI agents"})` with a real model (`llm="gpt-4o"`);
haltproof runs the same crew with a scripted one, so nothing here needs a network or a key.
"""
from crewai import Agent, Crew, Process, Task
from crewai.tools import tool


@tool("search_web")
def search_web(query: str) -> str:
    """Search the web and return the top results."""
    return f"3 results for {query}"


def has_a_title(output):
    """The article starts with a title line (`# ...`)."""
    if output.raw.startswith("# "):
        return True, output.raw
    return False, "Start the article with a title line: '# Title'"


researcher = Agent(
    role="Senior Researcher",
    goal="Uncover the latest developments in {topic}",
    backstory="You find the facts that matter and cite them.",
    tools=[search_web],
    llm="gpt-4o",
    max_iter=3,
)

writer = Agent(
    role="Writer",
    goal="Write a compelling article about {topic}",
    backstory="You turn research notes into clear prose.",
    llm="gpt-4o",
)

research_task = Task(
    description="Research the latest news about {topic}.",
    expected_output="A list of the 5 most important findings.",
    agent=researcher,
)

writing_task = Task(
    description="Write an article about {topic} from the findings.",
    expected_output="A 4-paragraph article in markdown, starting with a title.",
    agent=writer,
    guardrail=has_a_title,
    guardrail_max_retries=2,
)

crew = Crew(agents=[researcher, writer], tasks=[research_task, writing_task], process=Process.sequential)
