"""A triage agent handing off to two specialists, written the way the Agents SDK's docs write one.

The triage agent routes each request to the billing or the refund agent (or answers itself);
the refund agent issues refunds with a function tool and hands a request it cannot serve back to
triage (as the SDK's customer-service example does). In production the run is
`await Runner.run(triage_agent, question, max_turns=...)` with a real model; haltproof runs the
same agents with a scripted one, so nothing here needs a network or an API key.
"""
from agents import Agent, function_tool


@function_tool
def issue_refund(order_id: str) -> str:
    """Refund an order in full."""
    return f"refund issued for order {order_id}"


billing_agent = Agent(
    name="Billing agent",
    handoff_description="Specialist agent for billing questions",
    instructions="You answer questions about invoices and payments.",
)

refund_agent = Agent(
    name="Refund agent",
    handoff_description="Specialist agent for refunds",
    instructions="You issue refunds with issue_refund. If the customer wants anything else, "
                 "transfer back to the triage agent.",
    tools=[issue_refund],
)

triage_agent = Agent(
    name="Triage agent",
    instructions="You decide which agent handles the customer's request.",
    handoffs=[billing_agent, refund_agent],
)

refund_agent.handoffs.append(triage_agent)
