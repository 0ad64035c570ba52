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


class _ExcludedBy(TypedDict):
    rotation: str
    boundary: str


class ExcludedBy(_ExcludedBy, total=False):
    """Why an entry counts in no view: the key event of its author that
    leaves it out (``rotation``: the rotation's or recovery's entry, or the
    founder's entry binding a recovery not received yet) and its trust
    ``boundary``; ``event`` is ``rotate``, ``recover`` or ``unbound_recover``
    (a recover entry the roster does not bind); ``bound_by`` the founder's
    roster entry binding a recovery."""

    event: str
    bound_by: str | None


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
    signed_by: str
    """The key that signed the entry, when it is not its author's id."""
    excluded: ExcludedBy
    """Set with status ``excluded``: the entry counts in no view."""


class _TracedEvent(TypedDict):
    id: str
    author: str
    seq: int
    timestamp_ms: int
    kind: str | None
    text: str | None
    status: str | None
    payload_held: bool
    verified: bool


class TracedEvent(_TracedEvent, total=False):
    """One event of a trace, verified against its author's chain;
    ``signed_by`` names the key that signed it when not its author's id."""

    signed_by: str


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


class VoteCount(TypedDict):
    """Where an admin's vote stands: the admins in force that wrote the same
    act (this one included), how many make a quorum, and ``outcome``:
    ``short``, ``applied`` or ``conflict``."""

    voters: int
    threshold: int
    outcome: str


class RosterRecorded(TypedDict):
    """``admit`` or ``remove``: the roster event in the founder's chain, or an
    admin's vote (``vote`` null for the founder's events)."""

    id: str
    seq: int
    last_seq_admitted: int | None
    vote: VoteCount | None


class AdminsRecorded(TypedDict):
    """``admins``: the founder's entry naming the admins in force, how many
    make a quorum, and the acts a quorum made that the new admins do not
    sustain (``withdrawn``)."""

    id: str
    seq: int
    admins: list[str]
    threshold: int
    withdrawn: list[str]


class RecoveryRow(TypedDict):
    """A recovery the roster binds (both keys lost): the agent's last
    legitimate entry (``boundary``, at ``last_seq``), the ``key`` granted, the
    founder's entry that binds it (or a quorum's first vote), and the recover
    entry once held."""

    boundary: str
    last_seq: int
    key: str
    bound_by: str
    entry: str | None


class _Member(TypedDict):
    agent: str
    admitted_by: str | None


class Member(_Member, total=False):
    """A member of the roster: its ``current_key`` (the key of its highest
    entry that counts), the ``rotations`` of it that count, and the
    ``recoveries`` the founder bound, the last one deciding."""

    display_name: str | None
    current_key: str
    rotations: int
    recoveries: list[RecoveryRow]


class _Roster(TypedDict):
    founder: str
    members: list[Member]


class VoteRow(TypedDict):
    """An act admins voted for (a removal or a recovery): the votes of the
    admins in force, and ``outcome``: ``short``, ``applied`` or ``conflict``."""

    act: str
    voters: list[str]
    outcome: str


class Roster(_Roster, total=False):
    """``roster``: the workspace's members, derived from the founder's chain
    and its ``admins``' votes (``threshold`` of them make a quorum)."""

    removed: list[dict[str, Any]]
    frozen_at_fork_seq: int | None
    pending_at_seq: int | None
    cut_off: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    admins: list[str]
    threshold: int
    votes: list[VoteRow]


class KeyEventRow(TypedDict):
    """One key event of a chain: ``commit``, ``rotate`` or ``recover``."""

    entry: str
    seq: int
    event: str
    boundary: str | None
    key: str
    commitment: str


class _KeyHistory(TypedDict):
    agent: str
    events: list[KeyEventRow]
    current: list[str]


class KeyHistory(_KeyHistory, total=False):
    """``key_history``: an agent's key events, the key of each tip, and the
    recoveries the roster binds."""

    recoveries: list[RecoveryRow]


class KeyEventWritten(TypedDict):
    """``key_rotate``, ``key_revoke``: the key event written."""

    agent: str
    entry: str
    seq: int
    event: str
    boundary: str
    key: str
    commitment: str
    next_key_file: str


class RecoveryRecorded(TypedDict):
    """``key_recover``: the founder's roster entry binding the agent to a new
    key, or an admin's vote for it (``vote`` null for the founder's)."""

    id: str
    seq: int
    agent: str
    boundary: str
    last_seq: int
    key: str
    vote: VoteCount | None


class RevokedReference(TypedDict):
    """An accept or dispute naming an entry left out: it never takes effect."""

    by: str
    entry: str
    kind: str
    target: str


class _RevokedRange(TypedDict):
    author: str
    boundary: str
    count: int
    from_seq: int
    to_seq: int
    rotation: str
    referenced_by: list[RevokedReference]


class RevokedRange(_RevokedRange, total=False):
    """A range of a chain a key event leaves out (``event``: ``rotate``,
    ``recover`` or ``unbound_recover``)."""

    event: str


class _Audit(TypedDict):
    agent: str
    clean: bool
    held: int
    max_seq: int


class Audit(_Audit, total=False):
    """``audit``: an agent's chain verified end to end; ``revoked`` lists the
    ranges of it its own key events leave out."""

    view_len: int
    problems: list[str]
    fork_seqs: list[int]
    resolutions: list[dict[str, Any]]
    disputes_against: list[dict[str, Any]]
    disputes_made: list[dict[str, Any]]
    accepts_made: list[dict[str, Any]]
    revoked: list[RevokedRange]
