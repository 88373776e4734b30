"""An iterative refinement pipeline, as ADK's docs write one (LoopAgent, "Iterative Refinement"):
a first draft, then a loop of critic and refiner that ends when the refiner calls exit_loop
(escalate) or after max_iterations rounds."""

from google.adk.agents import LlmAgent, LoopAgent, SequentialAgent
from google.adk.tools.tool_context import ToolContext

GEMINI_MODEL = "gemini-2.5-flash"
STATE_CURRENT_DOC = "current_document"
STATE_CRITICISM = "criticism"
COMPLETION_PHRASE = "No major issues found."


def exit_loop(tool_context: ToolContext) -> dict[str, str]:
    """Call this function ONLY when the critique indicates no further changes are needed."""
    tool_context.actions.escalate = True
    return {}


initial_writer_agent = LlmAgent(
    name="InitialWriterAgent",
    model=GEMINI_MODEL,
    include_contents="none",
    instruction="Write the first draft of a short story (2-4 sentences) on the user's topic.",
    output_key=STATE_CURRENT_DOC,
)

critic_agent_in_loop = LlmAgent(
    name="CriticAgent",
    model=GEMINI_MODEL,
    include_contents="none",
    instruction=f"Review the document: {{{STATE_CURRENT_DOC}}}. Give one clear suggestion, or reply exactly "
                f"'{COMPLETION_PHRASE}'.",
    output_key=STATE_CRITICISM,
)

refiner_agent_in_loop = LlmAgent(
    name="RefinerAgent",
    model=GEMINI_MODEL,
    include_contents="none",
    instruction=f"If the critique {{{STATE_CRITICISM}}} is exactly '{COMPLETION_PHRASE}', call exit_loop and "
                "output no text. Otherwise rewrite the document to apply it.",
    tools=[exit_loop],
    output_key=STATE_CURRENT_DOC,
)

refinement_loop = LoopAgent(
    name="RefinementLoop",
    sub_agents=[critic_agent_in_loop, refiner_agent_in_loop],
    max_iterations=5,
)

root_agent = SequentialAgent(
    name="IterativeWritingPipeline",
    sub_agents=[initial_writer_agent, refinement_loop],
    description="Writes an initial document and then iteratively refines it with critique using an exit tool.",
)
