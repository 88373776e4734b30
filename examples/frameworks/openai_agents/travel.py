"""A tool-using agent run with max_turns, written the way the Agents SDK's docs write one.

The tools read and write the run's context (`RunContextWrapper[TravelContext]`). `get_weather`
keeps the SDK's default failure handling: an exception inside it becomes an error message the
model reads, and the run goes on. `book_hotel` turns that off (`failure_error_function=None`):
a failed booking must not be papered over, so its exception ends the run. In production:
`await Runner.run(travel_agent, question, context=TravelContext(), max_turns=...)`.
"""
from dataclasses import dataclass, field

from agents import Agent, RunContextWrapper, function_tool


@dataclass
class TravelContext:
    bookings: list[str] = field(default_factory=list)


class NoRoomsLeft(Exception):
    """The hotel is full."""


@function_tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    if city not in ("Paris", "Lisbon"):
        raise ValueError(f"unknown city {city}")
    return f"The weather in {city} is sunny."


@function_tool(failure_error_function=None)
def book_hotel(ctx: RunContextWrapper[TravelContext], city: str) -> str:
    """Book a hotel room for tonight."""
    if city == "Lisbon":
        raise NoRoomsLeft(f"no rooms left in {city}")
    ctx.context.bookings.append(city)
    return f"Booked a room in {city}."


travel_agent = Agent[TravelContext](
    name="Travel agent",
    instructions="Check the weather before booking a hotel. Answer in one sentence.",
    tools=[get_weather, book_hotel],
)
