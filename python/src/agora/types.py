"""The answers of the operations the client has typed methods for, as
``TypedDict``s: plain dicts at run time (a field the node adds later is
kept, not lost), typed for a checker. The node's OpenAPI document
(``GET /v1/openapi.json``, :meth:`agora.Client.openapi`) describes every
answer in full; these name the fields a program reads most.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

Status = Literal[
    "active",
    "contested",
    "superseded",
    "resolved",
    "parked",
    "retracted",
    "duplicate",
    "invalid",
    "pending",
]
"""A node's status (``pending``: it waits for events not received)."""


class ComputedOver(TypedDict, total=False):
    """The store's frontier an answer was computed over: two answers with the
    same ``frontier_hash`` were computed over the same entries."""

    frontier_hash: str
    authors: int
    chains: dict[str, Any]
    chains_truncated: bool
    exact: bool


class _Recorded(TypedDict):
    id: str
    kind: str
    seq: int


class Recorded(_Recorded, total=False):
    """A move recorded: the new entry's ``id`` (how later moves name it), its
    event ``kind`` and its ``seq`` in the agent's chain; ``pending`` lists
    referenced events not received yet."""

    pending: list[str]
    after: str


class Identity(TypedDict):
    """``identity``: the acting agent's id (64 hex characters)."""

    agent: str


class _NodeRef(TypedDict):
    id: str


class NodeRef(_NodeRef, total=False):
    """A node named in another's answer (a cause, a challenge)."""

    kind: str
    text: str
    status: str


class _DisputeOf(TypedDict):
    by: str
    dispute: str
    reason: str


class DisputeOf(_DisputeOf, total=False):
    """An agent's open dispute of an event."""

    by_name: str
    counter_claim: str


class _NodeStatus(TypedDict):
    id: str
    status: str


class NodeStatus(_NodeStatus, total=False):
    """A node's status and the events that made it so."""

    kind: str
    text: str
    author: str
    author_name: str
    seq: int
    timestamp_ms: int
    settled: bool
    why: list[NodeRef]
    successor: NodeRef
    latest: str | None
    disputed_by: list[DisputeOf]
    accepted_by: list[str]
    invalid: str | None
    missing: list[str]
    orphan: bool
    unconfirmed: bool
    expired: bool
    memory_kind: str | None
    frame_state: str | None
    task_state: str | None
    computed_over: ComputedOver


class TracedEvent(TypedDict):
    """One event of a trace, verified against its author's chain."""

    id: str
    author: str
    seq: int
    timestamp_ms: int
    kind: str | None
    text: str | None
    status: str | None
    payload_held: bool
    verified: bool


class Trace(TypedDict):
    """``trace``: every event that touched a node, oldest first."""

    id: str
    status: str
    events: list[TracedEvent]
    computed_over: ComputedOver


class Latest(TypedDict):
    """``latest``: a node's newest version."""

    id: str
    latest: str
    text: str
    status: str
    computed_over: ComputedOver


class _SearchHit(TypedDict):
    id: str
    score: float
    status: str
    kind: str
    text: str


class SearchHit(_SearchHit, total=False):
    """One search hit."""

    successor: NodeRef
    found_through: list[str]
    disputed_by: list[DisputeOf]
    accepted_by: list[str]


class SearchResult(TypedDict):
    """``search``: hits, best first."""

    hits: list[SearchHit]
    computed_over: ComputedOver


class _ListedNode(TypedDict):
    id: str
    kind: str
    status: str
    text: str


class ListedNode(_ListedNode, total=False):
    """A node in a listing (questions, orphans)."""

    frame_state: str | None


class Contested(TypedDict):
    """A contested node and what contests it."""

    id: str
    kind: str
    text: str
    status: str
    contested_by: list[NodeRef]
    tensions: list[NodeRef]


class Decision(TypedDict):
    """A decision and the events it rests on."""

    id: str
    kind: str
    text: str
    because: list[NodeRef]


class Oriented(TypedDict):
    """``orient``: the nodes on a topic, with the open questions and contested
    nodes among them."""

    topic: str
    nodes: list[SearchHit]
    open_questions: list[ListedNode]
    contested: list[Contested]
    computed_over: ComputedOver


class ViewHash(TypedDict):
    """``view_hash``: equal on every node that holds the same entries."""

    view_hash: str
    entries: int
    computed_over: ComputedOver


class RosterRecorded(TypedDict):
    """``admit`` or ``remove``: the roster event in the founder's chain."""

    id: str
    seq: int
    last_seq_admitted: int | None
