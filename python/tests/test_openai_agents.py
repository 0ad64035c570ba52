"""The OpenAI Agents SDK's tracing processor against a real node: a scripted
run with no model (traces and spans made with the SDK's own context
managers) recorded as signed actions, read back with the `actions`
operation; and the processor's added cost per span."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("agents")

import agents
from agents.tracing import (
    Span,
    Trace,
    TracingProcessor,
    agent_span,
    custom_span,
    function_span,
    generation_span,
    guardrail_span,
    handoff_span,
    task_span,
    trace,
)

import agora
from agora.integrations.openai_agents import AgoraTracingProcessor, otlp_span_id, otlp_trace_id
from conftest import Home, Node, wait_for


@pytest.fixture
def processors() -> Iterator[list[TracingProcessor]]:
    """The SDK's processors for the test (its default exporter, which would
    reach OpenAI's servers, is replaced), shut down at its end."""
    mine: list[TracingProcessor] = []
    yield mine
    for p in mine:
        p.shutdown()
    agents.set_trace_processors([])


def _actions(client: agora.Client, **query: Any) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = client.call("actions", limit=100_000, **query)["result"]
    return result


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_scripted_run_is_recorded_as_signed_actions(
    founder: Home, start_node: Callable[..., Node], processors: list[TracingProcessor]
) -> None:
    planner, researcher = founder.new_agent("planner"), founder.new_agent("researcher")
    node = start_node(founder)
    client = node.client()
    client.admit("planner", "Planner")
    client.admit("researcher", "Researcher")
    claim = client.propose("Ship the release on Friday")

    processor = AgoraTracingProcessor(client, agent_names={"Planner": "planner", "Research Agent": "researcher"})
    processors.append(processor)
    agents.set_trace_processors([processor])

    spans: dict[str, Span[Any]] = {}
    with trace("Release review", group_id="conv-7") as t:
        with agent_span("Planner", handoffs=["Research Agent"], tools=["web_search"]) as s1:
            spans["planner"] = s1
            with function_span("web_search", input='{"q": "agora provenance"}') as s2:
                spans["tool"] = s2
                s2.span_data.output = "3 results"
            with generation_span(input=[{"role": "user", "content": "Plan the release"}], model="gpt-test") as s3:
                spans["generation"] = s3
                s3.span_data.output = [{"role": "assistant", "content": "Ask the researcher"}]
            with guardrail_span("no_secrets", triggered=False) as s4:
                spans["guardrail"] = s4
            with handoff_span(from_agent="Planner", to_agent="Research Agent") as s5:
                spans["handoff"] = s5
        with agent_span("Research Agent") as s6:
            spans["researcher"] = s6
            with task_span("internal step"):  # not sent: its child hangs under the agent span
                with function_span("divide", input="1/0") as s7:
                    spans["failed"] = s7
                    s7.set_error({"message": "division by zero", "data": None})
            with custom_span(
                "objection",
                {"agora.move": "contradict", "agora.move.target": claim["id"], "agora.move.text": "Not before the audit"},
            ) as s8:
                spans["move"] = s8
            with custom_span("notes", {"topic": "release", "agora.cause": claim["id"]}) as s9:
                spans["custom"] = s9
    assert isinstance(t, Trace)
    processor.force_flush()
    assert processor.stats["sent"] == len(spans) and processor.stats["rejected"] == 0, processor.stats

    trace_id = otlp_trace_id(t.trace_id)

    def key(name: str) -> str:
        return f"{trace_id}/{otlp_span_id(t.trace_id, spans[name].span_id)}"

    by_span = {a["span"]: a for a in _actions(client)}
    got = {name: by_span[key(name)] for name in spans}
    for name, signer, operation, action_name in [
        ("planner", planner, "invoke_agent", "planner"),
        ("tool", planner, "execute_tool", "web_search"),
        ("generation", planner, "chat", "gpt-test"),
        ("guardrail", planner, "guardrail", "no_secrets"),
        ("handoff", planner, "handoff", "researcher"),
        ("researcher", researcher, "invoke_agent", "researcher"),
        ("failed", researcher, "execute_tool", "divide"),
        ("move", researcher, "move", "objection"),
        ("custom", researcher, "custom", "notes"),
    ]:
        a = got[name]
        assert (a["author"], a["operation"], a["name"], a["conversation"]) == (signer, operation, action_name, "conv-7"), (name, a)
    # The causal links as the SDK knew them (the task span left out).
    assert got["planner"]["parent"] == "" and got["researcher"]["parent"] == ""
    for child, parent in [("tool", "planner"), ("generation", "planner"), ("handoff", "planner"), ("failed", "researcher"), ("move", "researcher")]:
        assert got[child]["parent"] == key(parent), (child, got[child])
    # Contents stay in the process: their hashes are what the node would compute.
    assert got["tool"]["input_hash"] == _sha('{"q": "agora provenance"}')
    assert got["tool"]["output_hash"] == _sha("3 results")
    assert got["tool"]["text"] == ""
    assert got["failed"]["error"] == "division by zero"
    assert got["custom"]["cause"] == claim["id"]
    # The move the span carried: a contradiction in the researcher's chain.
    assert client.status(claim["id"])["status"] == "contested"
    contradiction = [h for h in client.search("Not before the audit")["hits"] if h["kind"] == "contradiction"]
    assert len(contradiction) == 1, contradiction
    assert client.status(contradiction[0]["id"])["author"] == researcher

    # Sent again (a retry, a second processor): recorded once.
    again = AgoraTracingProcessor(client, agent_names={"Planner": "planner", "Research Agent": "researcher"})
    processors.append(again)
    agents.set_trace_processors([again])
    with trace("Release review", trace_id=t.trace_id, group_id="conv-7"):
        with agent_span("Planner", span_id=spans["planner"].span_id):
            pass
    again.force_flush()
    assert again.stats["sent"] == 1 and again.stats["rejected"] == 0, again.stats
    assert [a["status"] for a in _actions(client) if a["span"] == key("planner")] == ["active"]


def test_contents_kept_and_an_unknown_agent_refused(
    founder: Home, start_node: Callable[..., Node], processors: list[TracingProcessor]
) -> None:
    founder.new_agent("planner")
    with open(founder.path / "agora.toml", "a", encoding="utf-8") as f:
        f.write("\n[otlp]\nkeep_contents = true\n")
    node = start_node(founder)
    client = node.client()
    client.admit("planner")
    processor = AgoraTracingProcessor(client, keep_contents=True)
    processors.append(processor)
    agents.set_trace_processors([processor])
    with trace("Contents", group_id="kept"):
        with agent_span("planner"):
            with function_span("lookup", input="the key") as s10:
                s10.span_data.output = "the value"
        with agent_span("Stranger"):  # no agent of the keyring, no [otlp] default_agent
            with function_span("lookup", input="a secret"):
                pass
    processor.force_flush()
    stats = processor.stats
    assert (stats["sent"], stats["rejected"]) == (2, 2), stats
    assert "Stranger" in (stats["last_error"] or ""), stats
    tool = _actions(client, operation="execute_tool", conversation="kept")
    assert [(a["name"], a["text"]) for a in tool] == [("lookup", "input: the key\noutput: the value")], tool
    assert tool[0]["input_hash"] == _sha("the key")


def test_the_processor_cost_per_span_is_measured(
    founder: Home, start_node: Callable[..., Node], processors: list[TracingProcessor]
) -> None:
    founder.new_agent("bench")
    node = start_node(founder)
    client = node.client()
    client.admit("bench")
    processor = AgoraTracingProcessor(client, agent_names={"Bench": "bench"}, keep_contents=False)
    processors.append(processor)

    class Timed(TracingProcessor):
        """Times the processor's work on the traced program's side."""

        def __init__(self) -> None:
            self.spent = 0.0
            self.ended = 0

        def on_trace_start(self, trace: Trace) -> None:
            processor.on_trace_start(trace)

        def on_trace_end(self, trace: Trace) -> None:
            processor.on_trace_end(trace)

        def on_span_start(self, span: Span[Any]) -> None:
            t0 = time.perf_counter()
            processor.on_span_start(span)
            self.spent += time.perf_counter() - t0

        def on_span_end(self, span: Span[Any]) -> None:
            t0 = time.perf_counter()
            processor.on_span_end(span)
            self.spent += time.perf_counter() - t0
            self.ended += 1

        def shutdown(self) -> None:
            pass

        def force_flush(self) -> None:
            processor.force_flush()

    timed = Timed()
    agents.set_trace_processors([timed])
    n = 10_000
    with trace("Benchmark", group_id="bench"):
        with agent_span("Bench"):
            for i in range(n - 1):
                with function_span("bench_tool", input=f'{{"i": {i}}}') as s11:
                    s11.span_data.output = str(i * i)
    per_span_ms = timed.spent / timed.ended * 1000
    print(f"\nAgoraTracingProcessor: {per_span_ms * 1000:.1f} µs per span on the traced program's side (on_span_start + on_span_end, {timed.ended} spans)")
    assert timed.ended == n
    # The figure is a benchmark (BENCHMARKS.md), not a check: no bound here.
    assert per_span_ms > 0

    t0 = time.perf_counter()
    processor.force_flush()
    print(f"AgoraTracingProcessor: the last spans sent {time.perf_counter() - t0:.2f} s after the run; stats {processor.stats}")
    assert processor.stats["sent"] == n and processor.stats["dropped"] == 0, processor.stats
    wait_for("every span recorded", lambda: True if len(_actions(client, conversation="bench")) == n else None)
