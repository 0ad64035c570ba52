"""CrewAI's memory on Agora claims, through CrewAI's own `Memory` (no model:
every field given, so no analysis call; the storage's own embedder is a
local feature hash, so no embedding call either). Skipped when crewai is
not installed: it lives in its own environment
(python/requirements-crewai.txt), its dependencies clashing with the OpenAI
Agents SDK's."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")  # CrewAI's own tracing waits 5 s on each memory save
pytest.importorskip("crewai", reason="crewai is installed by python/requirements-crewai.txt, in its own environment")

from crewai import Memory

import agora
from agora.integrations.crewai import AgoraMemoryStorage, MemoryTooLarge
from conftest import Home, Node


def _memory(client: agora.Client) -> tuple[Memory, AgoraMemoryStorage]:
    storage = AgoraMemoryStorage(client)
    # The llm is never called: every remember gives scope, categories and importance.
    return Memory(storage=storage, embedder=storage.embedder, llm="no-model"), storage


def test_memories_are_claims_whose_scopes_are_topics(founder: Home, start_node: Callable[..., Node]) -> None:
    bob = founder.new_agent("bob")
    node = start_node(founder)
    client = node.client()
    client.admit("bob")
    memory, storage = _memory(client)

    alice_pref = memory.remember(
        "Alice prefers dark mode in every editor", scope="/users/alice", categories=["preferences"], importance=0.8
    )
    memory.remember("Bob deploys on Fridays after the audit", scope="/users/bob", categories=["process"], importance=0.5)
    memory.remember("The release train leaves every second Tuesday", scope="/team", categories=["process"], importance=0.6)
    assert alice_pref is not None

    # Each memory is a signed claim of the acting agent, found by the node's search.
    hits = [h for h in client.search("dark mode editor")["hits"] if h["kind"] == "claim"]
    assert len(hits) == 1 and hits[0]["text"].startswith("Alice prefers dark mode"), hits
    status = client.status(hits[0]["id"])
    assert (status["author"], status["memory_kind"], status["status"]) == (founder.id, "semantic", "active"), status

    # Recall through CrewAI: the node's search, filtered to the scope.
    found = memory.recall("dark mode editor", scope="/users/alice", depth="shallow")
    assert [m.record.content for m in found] == ["Alice prefers dark mode in every editor"], found
    assert found[0].record.id == alice_pref.id and found[0].record.categories == ["preferences"]
    assert memory.recall("dark mode editor", scope="/users/bob", depth="shallow") == []
    assert [m.record.scope for m in memory.recall("deploys process Tuesday release", depth="shallow")] != []
    assert memory.list_scopes("/") == ["/team", "/users"]
    assert memory.list_scopes("/users") == ["/users/alice", "/users/bob"]
    info = memory.info("/users")
    assert (info.record_count, info.categories) == (2, ["preferences", "process"]), info
    assert memory.list_categories() == {"preferences": 1, "process": 2}

    # Another agent reads the same topic.
    as_bob, _ = _memory(node.client("bob"))
    shared = as_bob.recall("release train Tuesday", scope="/team", depth="shallow")
    assert [m.record.content for m in shared] == ["The release train leaves every second Tuesday"]
    assert bob != founder.id

    # An update supersedes the claim; forget retracts it; both stay signed.
    memory.update(alice_pref.id, content="Alice prefers light mode since March")
    updated = storage.get_record(alice_pref.id)
    assert updated is not None and updated.content == "Alice prefers light mode since March"
    assert client.status(hits[0]["id"])["status"] == "superseded"
    assert memory.forget(scope="/users/bob") == 1
    assert memory.recall("deploys Fridays audit", scope="/users", depth="shallow") == []
    assert storage.count("/users") == 1
    memory.reset()
    assert storage.count() == 0 and memory.list_scopes("/") == []


def test_a_memory_over_a_claims_limit_is_refused(client: agora.Client) -> None:
    memory, storage = _memory(client)
    with pytest.raises(MemoryTooLarge):
        storage.save([__import__("crewai.memory.types", fromlist=["MemoryRecord"]).MemoryRecord(content="x" * 20_000)])
    assert memory.list_scopes("/") == []
