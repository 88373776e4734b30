"""An order-status agent written the way Pydantic AI's docs write one: its tool reads the order
service's client from the run's **dependencies** (`deps_type=Deps`, `ctx.deps`), and that
service is flaky: a timeout asks the model to try again (`ModelRetry`), within `retries=2`.

In production:

    agent.run_sync('Where is my order A-17?', model='openai:gpt-5.2',
                   deps=Deps(orders=OrdersClient(api_key=...)), usage_limits=UsageLimits(request_limit=4))

haltproof runs the same agent with a scripted model and a scripted order service, so nothing here
needs a network or an API key.
"""
from dataclasses import dataclass

from pydantic_ai import Agent, ModelRetry, RunContext


class OrdersClient:
    """The order service's HTTP client (its calls go over the network)."""

    def __init__(self, api_key: str):
        self.api_key = api_key

    async def status(self, order_id: str) -> str:
        raise NotImplementedError('calls https://orders.example.com/v1/orders/{order_id}')


@dataclass
class Deps:
    orders: OrdersClient


agent = Agent(deps_type=Deps, retries=2, instructions='Answer in one sentence.')


@agent.tool
async def order_status(ctx: RunContext[Deps], order_id: str) -> str:
    """Look up where an order is."""
    try:
        return await ctx.deps.orders.status(order_id)
    except TimeoutError:
        raise ModelRetry('The order service timed out, please try again.') from None
