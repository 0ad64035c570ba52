"""A multi-agent trace sent by the official OpenTelemetry Python SDK over its
OTLP/HTTP exporter (protobuf) to a node's /v1/traces, as a framework's
tracer would: a planner runs a tool, hands off to a researcher, who records
a reasoning move from a span and runs a tool that fails; one span names an
agent the node does not know. Prints the trace and span ids it used, as
JSON, for tests/otlp.rs to check on two nodes."""

import json
import os
import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode

node = json.load(open(os.path.join(os.environ["AGORA_NODE_HOME"], "node.json")))
exporter = OTLPSpanExporter(
    endpoint=f"http://{node['control']}/v1/traces",
    headers={"Authorization": f"Bearer {node['token']}"},
    timeout=20,
)
provider = TracerProvider(resource=Resource.create({"service.name": "swarm"}))
provider.add_span_processor(BatchSpanProcessor(exporter))
tracer = provider.get_tracer("agora-otlp-test")

ids = {}


def keep(name, span):
    ctx = span.get_span_context()
    ids[name] = f"{ctx.trace_id:032x}/{ctx.span_id:016x}"


conversation = {"gen_ai.conversation.id": "conv-42"}
with tracer.start_as_current_span(
    "invoke_agent planner",
    attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner", **conversation},
) as root:
    keep("planner_run", root)
    with tracer.start_as_current_span(
        "execute_tool web_search",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "web_search",
            "gen_ai.tool.call.arguments": '{"q": "agora provenance"}',
            "gen_ai.tool.call.result": "3 results",
        },
    ) as tool:
        keep("planner_tool", tool)
    with tracer.start_as_current_span(
        "handoff",
        attributes={"gen_ai.operation.name": "handoff", "agora.handoff.to": "researcher"},
    ) as handoff:
        keep("handoff", handoff)
        with tracer.start_as_current_span(
            "invoke_agent researcher",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher", **conversation},
        ) as run:
            keep("researcher_run", run)
            with tracer.start_as_current_span(
                "a position",
                attributes={"agora.move": "propose", "agora.move.text": "Ship the release on Friday"},
            ) as move:
                keep("researcher_move", move)
            with tracer.start_as_current_span(
                "execute_tool calculator",
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "calculator"},
            ) as failing:
                keep("researcher_failed_tool", failing)
                failing.set_status(Status(StatusCode.ERROR, "division by zero"))
    with tracer.start_as_current_span(
        "invoke_agent mallory",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Mallory"},
    ) as stranger:
        keep("unknown_agent", stranger)
    with tracer.start_as_current_span("GET /health", attributes={"http.request.method": "GET"}):
        pass

if not provider.force_flush(20_000):
    sys.exit("the exporter did not flush within 20 s")
provider.shutdown()
print(json.dumps(ids))
