"""travel.py's real agent bound to travel.yaml: what its model may answer is the only glue."""
from travel import TravelContext, travel_agent

from haltproof.frameworks.openai_agents import AgentsAdapter, final, tool_call


class TravelAdapter(AgentsAdapter):
    reads = ("turns", "tool_runs", "status")
    scripted = {"model": {
        "weather": tool_call("get_weather", city="Paris"),
        "book": tool_call("book_hotel", city="Paris"),
        "book_full_hotel": tool_call("book_hotel", city="Lisbon"),
        "answer": final("Booked: sunny Paris awaits."),
    }}

    def agent(self, params):
        return travel_agent

    def inputs(self, params):
        return "Book me a hotel somewhere sunny tonight."

    def context(self, params):
        return TravelContext()

    def observe(self, run):
        return {"booked": len(run.context.bookings)}
