"""triage.py's real agents bound to triage.yaml: what each agent's model may answer is the only glue."""
from triage import triage_agent

from haltproof.frameworks.openai_agents import AgentsAdapter, final, handoff_to, tool_call


class TriageAdapter(AgentsAdapter):
    scripted = {
        "triage_says": {"to_billing": handoff_to("Billing agent"), "to_refunds": handoff_to("Refund agent"),
                        "answer": final("I can help with billing and refunds.")},
        "billing_says": {"answer": final("Your invoice is attached.")},
        "refunds_says": {"refund": tool_call("issue_refund", order_id="A-17"),
                         "to_triage": handoff_to("Triage agent"), "answer": final("Your refund is on its way.")},
    }

    def agent(self, params):
        return triage_agent

    def inputs(self, params):
        return "I was charged twice for order A-17."
