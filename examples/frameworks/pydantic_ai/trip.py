"""A day-trip planner written the way Pydantic AI's docs write one: two tools the model may
call in parallel, and a structured output (`TripPlan`) the model returns through Pydantic AI's
output tool.

In production:

    agent.run_sync('Plan a day trip from Lyon to Annecy.', model='openai:gpt-5.2',
                   usage_limits=UsageLimits(tool_calls_limit=3))

haltproof runs it with Pydantic AI's `FunctionModel` instead, so nothing here needs a network
or an API key.
"""
from pydantic import BaseModel
from pydantic_ai import Agent


class TripPlan(BaseModel):
    destination: str
    train: str
    weather: str


agent = Agent(instructions='Plan a day trip: check the weather and the trains first.',
              output_type=TripPlan, retries=1)


@agent.tool_plain
def get_forecast(city: str) -> str:
    """Get the weather forecast for a city."""
    return f'Sunny in {city}, 24 °C'


@agent.tool_plain
def find_trains(origin: str, destination: str) -> list[str]:
    """Find the morning trains between two cities."""
    return [f'{origin} 08:04 -> {destination} 09:58']
