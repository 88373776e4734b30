"""A help desk, as ADK's docs write a coordinator ("Coordinator/Dispatcher Pattern"): an LlmAgent
routing each request to a sub-agent through ADK's transfer_to_agent; the sub-agents may
transfer back (ADK allows transfers to the parent and to peers unless disallowed)."""

from google.adk.agents import LlmAgent


def lookup_invoice(order_id: str) -> dict[str, str]:
    """Look up the invoice of an order."""
    return {"order_id": order_id, "status": "paid twice"}


billing_agent = LlmAgent(
    name="Billing",
    model="gemini-2.5-flash",
    description="Handles billing inquiries.",
    instruction="Answer payment questions; look the invoice up first.",
    tools=[lookup_invoice],
)

support_agent = LlmAgent(
    name="Support",
    model="gemini-2.5-flash",
    description="Handles technical support requests.",
    instruction="Answer technical questions.",
)

coordinator = LlmAgent(
    name="HelpDeskCoordinator",
    model="gemini-2.5-flash",
    instruction="Route user requests: Use Billing agent for payment issues, Support agent for technical problems.",
    description="Main help desk router.",
    sub_agents=[billing_agent, support_agent],
)

root_agent = coordinator
