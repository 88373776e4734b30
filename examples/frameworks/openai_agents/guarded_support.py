"""support.py's agents in production, under the guard written from their proof (docs/how-to/guard.md).

    haltproof guard support.yaml -p max_turns=4 -o support_guard.json
    python guarded_support.py support_guard.json

The declaration says the refund agent refunds once, then answers. A run that does so passes the
guard's run hooks untouched. A model that drifts and asks for a second refund is stopped when it
answers, before the SDK runs the refund tool again. The model is the SDK's ScriptedModel and the
payments service a stand-in, so nothing needs a network."""
import asyncio
import json
import sys

from agents import RunConfig, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

import support
from haltproof.frameworks.openai_agents_guard import labels_of, run_guarded
from haltproof.guard import Guard, GuardStopped

QUESTION = "I was charged twice for order A-17."


class Payments:
    """The payment provider, standing in: it counts the refunds it made."""

    def __init__(self) -> None:
        self.refunds = 0

    async def refund(self, customer_id: str, order_id: str) -> str:
        self.refunds += 1
        return f"R-{self.refunds}"


def model(refunds: int) -> RunConfig:
    """Triage hands off to refunds; the refund agent refunds `refunds` times, then answers."""
    steps = [[function_call("transfer_to_refund_agent", {}, call_id="handoff")]]
    steps += [[function_call("issue_refund", {"order_id": "A-17"}, call_id=f"refund_{i}")] for i in range(refunds)]
    steps += [[assistant_message("Your refund is on its way.")]]
    return RunConfig(model=ScriptedModel(steps), tracing_disabled=True)


async def main(path: str) -> int:
    set_tracing_disabled(True)
    guard = Guard.load(path, spec="support.yaml")
    labels = labels_of("support.yaml")
    payments = Payments()
    result = await run_guarded(support.triage_agent, QUESTION, guard, labels=labels, max_turns=4, run_config=model(1),
                               context=support.SupportContext("C-42", payments))
    print("one refund:", result.final_output, f"({payments.refunds} refund made)")
    payments = Payments()
    try:
        await run_guarded(support.triage_agent, QUESTION, guard, labels=labels, max_turns=4, run_config=model(2),
                          context=support.SupportContext("C-42", payments))
    except GuardStopped as stop:
        print(f"a second refund asked: {stop} ({payments.refunds} refund made)")
        print(json.dumps(stop.decision.to_dict(), indent=2))
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
