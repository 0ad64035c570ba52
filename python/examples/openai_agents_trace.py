"""The OpenAI Agents SDK's traces recorded in Agora, with no model call.

Run a node first (`agora node run`), with keyring agents for the SDK's
agents (`agora agent new planner && agora admit planner`, the same for
researcher), then:

    pip install ./python openai-agents==0.24.0
    python python/examples/openai_agents_trace.py [HOME]

A real program only needs the two lines marked (1) and (2): every run of
`Runner.run(...)` is then recorded as signed actions.
"""

from __future__ import annotations

import sys

import agents
from agents.tracing import agent_span, custom_span, function_span, handoff_span, trace

import agora
from agora.integrations.openai_agents import AgoraTracingProcessor

node = agora.Client.from_home(sys.argv[1] if len(sys.argv) > 1 else None)
processor = AgoraTracingProcessor(node, agent_names={"Planner": "planner", "Researcher": "researcher"})  # (1)
agents.set_trace_processors([processor])  # (2) or add_trace_processor, beside OpenAI's exporter

claim = node.propose("Ship the release on Friday")
with trace("Release review", group_id="release-42"):
    with agent_span("Planner", handoffs=["Researcher"]):
        with function_span("web_search", input='{"q": "open incidents"}') as tool:
            tool.span_data.output = "2 open incidents"
        with handoff_span(from_agent="Planner", to_agent="Researcher"):
            pass
    with agent_span("Researcher"):
        # A reasoning move carried by a span: recorded as the researcher's contradiction.
        with custom_span("objection", {"agora.move": "contradict", "agora.move.target": claim["id"],
                                       "agora.move.text": "Two incidents are still open"}):
            pass
processor.force_flush()
print(processor.stats)
for action in node.call("actions", conversation="release-42")["result"]:
    print(action["seq"], action["author"][:8], action["operation"], action["name"], action["parent"])
print(node.status(claim["id"])["status"])  # contested
