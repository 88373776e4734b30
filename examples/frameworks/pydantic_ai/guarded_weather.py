"""weather.py's agent in production, under the guard of its known violation (docs/how-to/guard.md).

    haltproof guard weather.yaml -p request_limit=4 -p tool_calls_limit=2 -p retries=2 --allow-violated -o weather_guard.json
    python guarded_weather.py weather_guard.json

haltproof found that Pydantic AI's tool_calls_limit counts successful calls only: with a timeout
first, the forecast tool can run three times under a limit of 2. The guard enforces what the
limit was meant to say: a run that asks for the forecast once passes untouched; a run whose first
call timed out and whose model asks a third time is stopped before the third call runs.
Steps some continuation of which could break the property need approval: here every one is
approved, so only a step that certainly breaks it stops the run. The model is Pydantic AI's
FunctionModel and the timeout is simulated, so nothing needs a network."""
import asyncio
import json
import sys

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

import weather
from haltproof.frameworks.pydantic_ai_guard import labels_of, run_guarded
from haltproof.guard import Guard, GuardStopped

PROMPT = "What is the weather in Paris?"


def forecast() -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("get_forecast", {"city": "Paris"})])


def answer() -> ModelResponse:
    return ModelResponse(parts=[TextPart("Sunny in Paris, 24 °C.")])


def model(*responses: ModelResponse) -> FunctionModel:
    left = iter(responses)
    return FunctionModel(lambda messages, info: next(left))


def timing_out_once() -> list[str]:
    """The weather service times out on its first call; the cities it served."""
    served: list[str] = []
    real = weather.fetch_forecast

    def service(city: str) -> str:
        if not served and not getattr(service, "failed", False):
            service.failed = True       # type: ignore[attr-defined]
            raise weather.ServiceTimeout(city)
        served.append(city)
        return real(city)
    weather.fetch_forecast = service
    return served


async def runs(guard: Guard, labels: dict) -> int:
    result = await run_guarded(weather.agent, PROMPT, guard, labels=labels, approve=lambda d: True,
                               model=model(forecast(), answer()), usage_limits=weather.LIMITS)
    print("one forecast:", result.output)
    served = timing_out_once()
    try:
        await run_guarded(weather.agent, PROMPT, guard, labels=labels, approve=lambda d: True,
                          model=model(forecast(), forecast(), forecast(), answer()), usage_limits=weather.LIMITS)
    except GuardStopped as stop:
        print(f"a timeout, then three forecasts: {stop} (the service ran {len(served)} time(s) after the timeout)")
        print(json.dumps(stop.decision.to_dict(), indent=2, ensure_ascii=False))
        return 0
    return 1


def main(path: str) -> int:
    guard = Guard.load(path, spec="weather.yaml")
    labels = labels_of("weather.yaml")        # runs the agent on a loop of its own: before asyncio.run
    return asyncio.run(runs(guard, labels))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
