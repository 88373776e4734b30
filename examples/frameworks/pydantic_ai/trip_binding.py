"""trip.py's real agent bound to trip.yaml: the model's answers and the forecast's outcomes are the only glue."""
from pydantic_ai import ModelRetry
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from trip import agent

from haltproof.frameworks.pydantic_ai import OK, AgentAdapter

FORECAST = ToolCallPart("get_forecast", {"city": "Annecy"})
TRAINS = ToolCallPart("find_trains", {"origin": "Lyon", "destination": "Annecy"})
PLAN = {"destination": "Annecy", "train": "Lyon 08:04 -> Annecy 09:58", "weather": "Sunny, 24 °C"}


class TripAdapter(AgentAdapter):
    responses = {
        "both": ModelResponse(parts=[FORECAST, TRAINS]),              # two calls in parallel
        "forecast": ModelResponse(parts=[FORECAST]),                  # one call
        "plan": ModelResponse(parts=[ToolCallPart("final_result", PLAN)]),     # the output tool
        "chat": ModelResponse(parts=[TextPart("Annecy is lovely in June!")]),  # text, not a TripPlan
    }
    tool_outcomes = {"get_forecast": {"ok": OK, "timeout": ModelRetry("The weather service timed out.")}}
    reads = ("tool_runs", "output_retries")

    def agent(self):
        return agent

    def prompt(self, params):
        return "Plan a day trip from Lyon to Annecy."
