"""A hierarchical crew with delegation, written the way CrewAI's docs write one.

CrewAI makes a manager (from `manager_llm`) that delegates the crew's task to its agents with
its own delegation tools; the editor may in turn delegate to the reporter (allow_delegation),
as CrewAI's collaboration docs show. In production the run is `crew.kickoff(inputs=...)` with a
real model; haltproof runs the same crew with a scripted one, offline.
"""
from crewai import Agent, Crew, Process, Task

reporter = Agent(
    role="Reporter",
    goal="Get the facts about {story}",
    backstory="You check every fact twice.",
    llm="gpt-4o",
)

editor = Agent(
    role="Editor",
    goal="Publish a clear story about {story}",
    backstory="You edit reports and send them back for facts when they are thin.",
    allow_delegation=True,
    llm="gpt-4o",
)

story_task = Task(
    description="Produce a publishable story about {story}.",
    expected_output="A short news story.",
)

crew = Crew(
    agents=[reporter, editor],
    tasks=[story_task],
    process=Process.hierarchical,
    manager_llm="gpt-4o",
)
