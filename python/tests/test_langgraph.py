"""LangGraph's checkpointer and store backed by a real node: the official
conformance suite (langgraph-checkpoint-conformance), a graph run with no
model whose checkpoints are signed actions linked to their parents (a fork
a branch), a thread deleted by redaction, and the store."""

from __future__ import annotations

import asyncio
import json
import operator
from collections.abc import AsyncGenerator, Callable
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.graph import END, START, StateGraph

import agora
from agora.integrations.langgraph import AgoraCheckpointSaver, AgoraStore, CheckpointTooLarge
from conftest import Home, Node


def test_the_conformance_suite_passes(make_home: Callable[[], Home], start_node: Callable[..., Node]) -> None:
    @checkpointer_test(name="AgoraCheckpointSaver")
    async def agora_checkpointer() -> AsyncGenerator[AgoraCheckpointSaver, None]:
        # A fresh node for each capability's suite: listing every thread sees only its own.
        node = start_node(make_home())
        yield AgoraCheckpointSaver(node.client())
        node.stop()

    report = asyncio.run(validate(agora_checkpointer))
    report.print_report()
    for name, result in sorted(report.results.items()):
        print(f"  {name}: {result.tests_passed} passed, {result.tests_failed} failed, {result.tests_skipped} skipped")
    assert report.passed_all_base(), {n: r.failures for n, r in report.results.items() if r.failures}


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


def _graph(saver: AgoraCheckpointSaver) -> Any:
    builder = StateGraph(State)
    builder.add_node("plan", lambda s: {"steps": ["plan"]})
    builder.add_node("act", lambda s: {"steps": ["act"]})
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "act")
    builder.add_edge("act", END)
    return builder.compile(checkpointer=saver)


def test_a_graph_checkpoints_as_signed_actions_and_forks_are_branches(client: agora.Client) -> None:
    saver = AgoraCheckpointSaver(client)
    graph = _graph(saver)
    config: Any = {"configurable": {"thread_id": "thread-1"}}
    assert graph.invoke({"steps": ["start"]}, config) == {"steps": ["start", "plan", "act"]}
    history = list(graph.get_state_history(config))
    assert len(history) == 4, history  # input, start, after plan, after act

    actions = client.call("actions", operation="checkpoint", name="thread-1")["result"]
    assert len(actions) == 4 and {a["author"] for a in actions} == {client.identity()["agent"]}
    by_checkpoint = {h.config["configurable"]["checkpoint_id"]: h for h in history}
    ids = {a["id"]: a for a in actions}
    # Each checkpoint's event is caused by its parent's.
    event = {json.loads(a["text"])["checkpoint_id"]: a["id"] for a in actions}
    assert set(event) == set(by_checkpoint)
    for cp, snapshot in by_checkpoint.items():
        parent = snapshot.parent_config
        expected = event[parent["configurable"]["checkpoint_id"]] if parent else None
        assert ids[event[cp]]["cause"] == expected, (cp, ids[event[cp]])

    # A fork: the state after "plan" updated, and run on from there: a second branch from one parent.
    after_plan = next(h for h in history if h.values["steps"] == ["start", "plan"])
    forked = graph.update_state(after_plan.config, {"steps": ["fork"]})
    assert graph.invoke(None, forked) == {"steps": ["start", "plan", "fork", "act"]}
    actions = client.call("actions", operation="checkpoint", name="thread-1")["result"]
    causes = [a["cause"] for a in actions]
    assert causes.count(event[after_plan.config["configurable"]["checkpoint_id"]]) == 2, causes
    assert graph.get_state(config).values == {"steps": ["start", "plan", "fork", "act"]}
    assert client.call("actions", operation="checkpoint_write", name="thread-1")["result"], "put_writes recorded"

    # Deleted: the payloads redacted, the thread empty, the chain still signed.
    saver.delete_thread("thread-1")
    assert saver.get_tuple(config) is None
    assert all(a["text"] == "" for a in client.call("actions", operation="checkpoint")["result"])
    assert client.call("verify")


def test_a_checkpoint_over_the_limit_is_refused(client: agora.Client) -> None:
    saver = AgoraCheckpointSaver(client)
    graph = _graph(saver)
    with pytest.raises(CheckpointTooLarge, match="at most 524288 bytes"):
        graph.invoke({"steps": ["x" * 600_000]}, {"configurable": {"thread_id": "big"}})


def test_the_store(client: agora.Client) -> None:
    store = AgoraStore(client)
    store.put(("users", "alice"), "prefs", {"theme": "dark", "size": 3})
    store.put(("users", "bob"), "prefs", {"theme": "light", "size": 5})
    store.put(("docs",), "readme", {"text": "signed reasoning events for agent swarms"})
    item = store.get(("users", "alice"), "prefs")
    assert item is not None and item.value == {"theme": "dark", "size": 3}
    store.put(("users", "alice"), "prefs", {"theme": "solarized", "size": 4})
    again = store.get(("users", "alice"), "prefs")
    assert again is not None and again.value["theme"] == "solarized" and again.created_at == item.created_at
    assert {i.key for i in store.search(("users",))} == {"prefs"} and len(store.search(("users",))) == 2
    assert [i.namespace for i in store.search(("users",), filter={"size": {"$gt": 4}})] == [("users", "bob")]
    assert [i.key for i in store.search((), query="agent swarms")][0] == "readme"
    assert sorted(store.list_namespaces()) == [("docs",), ("users", "alice"), ("users", "bob")]
    assert store.list_namespaces(prefix=("users",), max_depth=1) == [("users",)]
    store.delete(("users", "bob"), "prefs")
    assert store.get(("users", "bob"), "prefs") is None
    assert asyncio.run(store.aget(("docs",), "readme")) is not None
    puts = client.call("actions", operation="store_put")["result"]
    assert [a["name"] for a in puts][:2] == ["users/alice/prefs", "users/bob/prefs"]
