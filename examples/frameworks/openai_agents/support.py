"""A triage app written the way the Agents SDK's docs write one, with a **run context**: the agents
are `Agent[SupportContext]`, and the refund tool reads the customer and the payments client from
`RunContextWrapper[SupportContext]`. Triage hands the request to billing or refunds; the refund
agent refunds through the payments service, which may decline (the SDK's default failure handling
turns that into an error message the model reads).

In production:

    await Runner.run(triage_agent, question, max_turns=...,
                     context=SupportContext(customer_id=..., payments=PaymentsClient(api_key=...)))

haltproof runs the same agents with a scripted model and a scripted payments service, so nothing
here needs a network or an API key.
"""
from dataclasses import dataclass

from agents import Agent, RunContextWrapper, function_tool


class PaymentDeclined(Exception):
    """The payment provider refused the refund."""


class PaymentsClient:
    """The payment provider's HTTP client (its calls go over the network)."""

    def __init__(self, api_key: str):
        self.api_key = api_key

    async def refund(self, customer_id: str, order_id: str) -> str:
        raise NotImplementedError("calls https://payments.example.com/v2/refunds")


@dataclass
class SupportContext:
    customer_id: str
    payments: PaymentsClient


@function_tool
async def issue_refund(ctx: RunContextWrapper[SupportContext], order_id: str) -> str:
    """Refund an order in full."""
    receipt = await ctx.context.payments.refund(ctx.context.customer_id, order_id)
    return f"Refund {receipt} issued for order {order_id}."


billing_agent = Agent[SupportContext](
    name="Billing agent",
    handoff_description="Specialist agent for billing questions",
    instructions="You answer questions about invoices and payments.",
)

refund_agent = Agent[SupportContext](
    name="Refund agent",
    handoff_description="Specialist agent for refunds",
    instructions="You issue refunds with issue_refund, then tell the customer.",
    tools=[issue_refund],
)

triage_agent = Agent[SupportContext](
    name="Triage agent",
    instructions="You decide which agent handles the customer's request.",
    handoffs=[billing_agent, refund_agent],
)
