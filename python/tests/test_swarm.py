"""A swarm of framework agents recording through two nodes (issue 40's
done-when): a scripted OpenAI Agents run (no model) traced into one node,
a LangGraph graph (no model) checkpointing into the other; each node ends
holding the other's actions, and both the same view."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("agents")
pytest.importorskip("langgraph")

import agents
from agents.tracing import agent_span, custom_span, function_span, handoff_span, trace
from langgraph.graph import END, START, StateGraph

import agora
from agora.integrations.langgraph import AgoraCheckpointSaver
from agora.integrations.openai_agents import AgoraTracingProcessor
from conftest import Home, Node, wait_for


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


def test_framework_agents_on_two_nodes_reach_one_view(
    founder: Home, make_home: Callable[[], Home], start_node: Callable[..., Node]
) -> None:
    planner, researcher = founder.new_agent("planner"), founder.new_agent("researcher")
    member = make_home()
    a_node = start_node(founder)
    a = a_node.client()
    a.admit("planner", "Planner")
    a.admit("researcher", "Researcher")
    a.admit(member.id, "Graph runner")
    b = start_node(member, founder.id, [a_node.addr]).client()

    # The OpenAI Agents SDK's run, traced into the founder's node.
    processor = AgoraTracingProcessor(a, agent_names={"Planner": "planner", "Researcher": "researcher"})
    agents.set_trace_processors([processor])
    try:
        with trace("Release review", group_id="swarm"):
            with agent_span("Planner"):
                with function_span("web_search", input='{"q": "open incidents"}') as tool:
                    tool.span_data.output = "2 open incidents"
                with handoff_span(from_agent="Planner", to_agent="Researcher"):
                    pass
            with agent_span("Researcher"):
                with custom_span("position", {"agora.move": "propose", "agora.move.text": "Hold the release until both incidents close"}):
                    pass
        processor.force_flush()
        assert processor.stats["sent"] == 5 and processor.stats["rejected"] == 0, processor.stats
    finally:
        processor.shutdown()
        agents.set_trace_processors([])

    # The LangGraph graph, checkpointing into the member's node.
    builder = StateGraph(State)
    builder.add_node("plan", lambda s: {"steps": ["plan"]})
    builder.add_node("act", lambda s: {"steps": ["act"]})
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "act")
    builder.add_edge("act", END)
    graph = builder.compile(checkpointer=AgoraCheckpointSaver(b))
    config: Any = {"configurable": {"thread_id": "swarm-thread"}}
    assert graph.invoke({"steps": ["start"]}, config) == {"steps": ["start", "plan", "act"]}

    def authors(client: agora.Client) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for action in client.call("actions")["result"]:
            out.setdefault(action["operation"], set()).add(action["author"])
        return out

    expected = {
        "invoke_agent": {planner, researcher},
        "execute_tool": {planner},
        "handoff": {planner},
        "move": {researcher},
        "checkpoint": {member.id},
        "checkpoint_write": {member.id},
    }
    for client in (a, b):
        wait_for("every action on both nodes", lambda: authors(client) == expected or None)
    wait_for("both nodes to hold the same view", lambda: a.view_hash()["view_hash"] == b.view_hash()["view_hash"] or None)
    # The move the researcher's span carried, on the graph runner's node too; and the checkpoints on the founder's.
    assert [h["kind"] for h in b.search("Hold the release")["hits"]] == ["proposition"]
    assert len(a.call("actions", operation="checkpoint", name="swarm-thread")["result"]) == 4
