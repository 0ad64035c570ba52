"""A client of an Agora node's JSON API, with the standard library only.

Every operation is ``POST /v1/ops/<name>`` with a JSON object (its input)
and answers a JSON object (its output), behind the control channel's bearer
token; the ``Agora-Agent`` header makes the call as another agent of the
node's keyring. ``GET /v1/openapi.json`` describes every operation.
:meth:`Client.call` reaches any of them; the typed methods cover the
reasoning moves, the reads and the roster.
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import Any, cast

from .errors import AgoraError, NodeUnreachable, error_from_answer
from .types import (
    AdminsRecorded,
    Audit,
    Contested,
    Decision,
    Identity,
    KeyHistory,
    Latest,
    ListedNode,
    NodeStatus,
    Oriented,
    RecoveryRecorded,
    Recorded,
    Roster,
    RosterRecorded,
    SearchResult,
    Trace,
    ViewHash,
)

__all__ = ["Client", "DEFAULT_CONTROL", "DEFAULT_TIMEOUT", "AGENT_HEADER", "default_home"]

DEFAULT_CONTROL = "127.0.0.1:7412"
"""The control address a node listens on when nothing else is configured."""

DEFAULT_TIMEOUT = 90.0
"""Seconds a call waits for its answer (a redaction may wait up to 60 s for reads)."""

AGENT_HEADER = "Agora-Agent"
"""The header that names the keyring agent a call acts as."""

_USER_AGENT = "agora-swarm-python/0.1"

Json = dict[str, Any]


def default_home() -> Path:
    """The home the command line uses: ``$AGORA_HOME``, else ``~/.agora``."""
    env = os.environ.get("AGORA_HOME")
    return Path(env) if env else Path.home() / ".agora"


def _read_token_file(path: str) -> str | None:
    """The token in a node's token file now (it may be newer than ``node.json``'s)."""
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read(4096).strip()
    except OSError:
        return None
    return token if token and not any(c.isspace() for c in token) else None


def _check_header_value(what: str, value: str) -> None:
    if not value or any(ord(c) < 0x21 or ord(c) > 0x7E for c in value):
        raise ValueError(f"{what} must be non-empty printable ASCII without spaces: {value!r}")


def _text(value: str | int) -> str:
    """A seq, a time in ms or an id, as the string the API takes."""
    return str(value)


class Client:
    """A client of one node's JSON API, acting as one agent of its keyring.

    Args:
        control: the node's control address, ``HOST:PORT`` (``control`` in
            ``<home>/node.json``), or a base URL ``http://HOST:PORT``.
        token: the bearer token (``token`` in ``<home>/node.json``;
            ``agora token show``).
        agent: the keyring agent to act as (the ``Agora-Agent`` header);
            None acts as the node's own agent.
        timeout: seconds each call waits for its answer.

    A client holds no connection and no state beyond these; it is safe to
    share between threads. Proxies from the environment are not used: the
    control channel is reached directly.
    """

    def __init__(
        self,
        control: str = DEFAULT_CONTROL,
        token: str | None = None,
        agent: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        base = control.rstrip("/")
        if not base.startswith(("http://", "https://")):
            base = "http://" + base
        if token is not None:
            _check_header_value("token", token)
        if agent is not None:
            _check_header_value("agent", agent)
        self._base = base
        self._token = token
        self._agent = agent
        self._timeout = timeout
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @classmethod
    def from_home(
        cls,
        home: str | os.PathLike[str] | None = None,
        agent: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Client:
        """The client of the node running on ``home`` (default: ``$AGORA_HOME``,
        else ``~/.agora``), from ``<home>/node.json`` (its ``control`` and
        ``token``; the token file's current token when ``node.json`` names a
        readable one). Raises :class:`NodeUnreachable` when no node file is
        there."""
        path = Path(home).expanduser() if home is not None else default_home()
        node_file = path / "node.json"
        try:
            node = json.loads(node_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise NodeUnreachable(f"no node runs on {path}: {node_file} is missing (`agora --home {path} node run` starts one)") from None
        except (OSError, ValueError) as e:
            raise NodeUnreachable(f"cannot read {node_file}: {e}") from e
        if not isinstance(node, dict) or not isinstance(node.get("control"), str) or not isinstance(node.get("token"), str):
            raise NodeUnreachable(f"{node_file} names no control address and token")
        token: str = node["token"]
        token_file = node.get("token_file")
        if isinstance(token_file, str):
            token = _read_token_file(token_file) or token
        return cls(node["control"], token, agent, timeout=timeout)

    def with_agent(self, agent: str | None) -> Client:
        """The same node, acting as ``agent`` of its keyring (None: the node's
        own agent). ``agora agent new NAME`` makes one; the founder admits it."""
        return Client(self._base, self._token, agent, timeout=self._timeout)

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` of the node's control channel."""
        return self._base

    @property
    def agent(self) -> str | None:
        """The keyring agent this client acts as (None: the node's own)."""
        return self._agent

    def __repr__(self) -> str:
        return f"Client({self._base!r}, agent={self._agent!r})"

    # ------------------------------------------------------------------
    # HTTP

    def _request(self, method: str, path: str, body: Mapping[str, Any] | bytes | None = None) -> Json:
        if body is None or isinstance(body, bytes):
            data = body
        else:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Accept": "application/json", "User-Agent": _USER_AGENT}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        if self._agent is not None:
            headers[AGENT_HEADER] = self._agent
        request = urllib.request.Request(self._base + path, data=data, headers=headers, method=method)
        try:
            with self._opener.open(request, timeout=self._timeout) as response:
                status: int = response.status
                raw: bytes = response.read()
        except urllib.error.HTTPError as e:
            try:
                raw_error = e.read()
            finally:
                e.close()
            raise error_from_answer(e.code, raw_error) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise NodeUnreachable(f"{method} {self._base}{path}: no answer: {reason}") from e
        try:
            answer = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise AgoraError("internal", "answer_not_json", f"{method} {path}: the answer ({status}) is not JSON: {e}", None, status) from e
        if not isinstance(answer, dict):
            raise AgoraError("internal", "answer_not_json", f"{method} {path}: the answer is not a JSON object", None, status)
        return answer

    def call(self, op: str, input: Mapping[str, Any] | None = None, /, **fields: Any) -> Json:
        """Run operation ``op`` with its input: the mapping ``input`` and/or the
        keyword ``fields`` (a field that is a Python keyword, such as ``from``,
        goes in the mapping). Fields that are None are left out, so the node's
        default applies. Returns the operation's answer, a JSON object (a list
        comes back as ``{"result": [...]}``); raises :class:`AgoraError`."""
        merged: dict[str, Any] = dict(input or {})
        merged.update(fields)
        body = {k: v for k, v in merged.items() if v is not None}
        return self._request("POST", "/v1/ops/" + urllib.parse.quote(op, safe=""), body)

    def node_status(self) -> Json:
        """``GET /v1/status``: the node's peers, per-author frontiers, sync lag,
        refused input and bans (what ``agora node status --json`` prints)."""
        return self._request("GET", "/v1/status")

    def export_traces(self, request: Mapping[str, Any] | bytes) -> Json:
        """``POST /v1/traces``: an OTLP/JSON trace export (``resourceSpans``...,
        a mapping or its encoded bytes); each GenAI span becomes a signed
        ``action`` (protocol-spec/otlp.md). Answers the
        ``ExportTraceServiceResponse``: ``{}``, or ``partialSuccess`` with
        ``rejectedSpans`` and ``errorMessage`` when some spans were refused."""
        return self._request("POST", "/v1/traces", request)

    def openapi(self) -> Json:
        """``GET /v1/openapi.json``: the OpenAPI 3.1 document of every operation."""
        return self._request("GET", "/v1/openapi.json")

    def operations(self) -> list[str]:
        """The names of the node's operations, from its OpenAPI document."""
        prefix = "/v1/ops/"
        return sorted(p[len(prefix) :] for p in self.openapi().get("paths", {}) if p.startswith(prefix))

    def _recorded(self, op: str, **fields: Any) -> Recorded:
        return cast(Recorded, self.call(op, **fields))

    def _list(self, op: str) -> list[Any]:
        result = self.call(op).get("result", [])
        return list(result) if isinstance(result, list) else []

    # ------------------------------------------------------------------
    # Reasoning moves: each records a signed event in the acting agent's
    # chain and returns its id, kind and seq.

    def propose(self, text: str) -> Recorded:
        """Record a new position, stated so it can be supported or contradicted."""
        return self._recorded("propose", text=text)

    def support(self, target: str, text: str) -> Recorded:
        """Record evidence for an earlier node."""
        return self._recorded("support", target=target, text=text)

    def contradict(self, target: str, text: str) -> Recorded:
        """Contradict a node: it becomes contested until the contradiction is
        resolved (a refinement that resolves it, or a resolve)."""
        return self._recorded("contradict", target=target, text=text)

    def refine(self, target: str, text: str, resolves: Sequence[str] = ()) -> Recorded:
        """Refine a node (it becomes superseded); ``resolves`` lists the
        contradictions the refinement answers."""
        return self._recorded("refine", target=target, text=text, resolves=list(resolves))

    def synthesize(self, sources: Sequence[str], text: str) -> Recorded:
        """Combine two or more nodes into one position."""
        return self._recorded("synthesize", sources=list(sources), text=text)

    def ask(self, text: str) -> Recorded:
        """Record an open question (open until a resolve answers it)."""
        return self._recorded("ask", text=text)

    def resolve(self, target: str, text: str) -> Recorded:
        """Resolve a question, contradiction, tension or contradicts-relation."""
        return self._recorded("resolve", target=target, text=text)

    def reframe(self, target: str, text: str) -> Recorded:
        """Restate a position or question; the original becomes superseded."""
        return self._recorded("reframe", target=target, text=text)

    def park(self, target: str, reason: str = "") -> Recorded:
        """Set a node aside (status parked); :meth:`resume` brings it back."""
        return self._recorded("park", target=target, reason=reason)

    def resume(self, target: str) -> Recorded:
        """Bring a parked node back."""
        return self._recorded("resume", target=target)

    def connect(self, target: str, other: str, text: str) -> Recorded:
        """Record that two nodes are related, and how."""
        return self._recorded("connect", target=target, other=other, text=text)

    def tension(self, target: str, other: str, text: str) -> Recorded:
        """Record a tension between two nodes (both may hold); open until resolved."""
        return self._recorded("tension", target=target, other=other, text=text)

    # The merge layer: positions on other agents' chains.

    def accept(self, agent: str, up_to: str | int) -> Recorded:
        """Accept ``agent``'s chain (its 64-hex id) through ``up_to``: a seq of
        that chain or an entry id."""
        return self._recorded("accept", agent=agent, up_to=_text(up_to))

    def dispute(self, target: str, reason: str, counter: str | None = None) -> Recorded:
        """Dispute exactly one event of another agent's chain, with a reason
        and optionally a counter-claim."""
        return self._recorded("dispute", target=target, reason=reason, counter=counter)

    def withdraw(self, target: str) -> Recorded:
        """Withdraw one of this agent's disputes (``target``: the dispute event)."""
        return self._recorded("withdraw", target=target)

    # ------------------------------------------------------------------
    # Reads

    def identity(self) -> Identity:
        """The acting agent's id: what others pass as ``agent``."""
        return cast(Identity, self.call("identity"))

    def orient(self, topic: str, include_superseded: bool = False, limit: int | None = None) -> Oriented:
        """Start on a topic: matching nodes with their statuses, who disputes or
        accepts each, and the open questions and contested nodes among them."""
        return cast(Oriented, self.call("orient", topic=topic, include_superseded=include_superseded, limit=limit))

    def status(self, target: str) -> NodeStatus:
        """A node's status and the events that made it so."""
        return cast(NodeStatus, self.call("status", target=target))

    def trace(self, target: str) -> Trace:
        """Every event that touched a node, in order, each verified."""
        return cast(Trace, self.call("trace", target=target))

    def latest(self, target: str) -> Latest:
        """A node's newest version (following refinements, reframes, updates)."""
        return cast(Latest, self.call("latest", target=target))

    def search(self, query: str, all: bool = False, current: bool = False, limit: int | None = None) -> SearchResult:
        """Full-text search (BM25); superseded and retracted nodes are left out
        unless ``all``; ``current`` shows a superseded match's current version."""
        return cast(SearchResult, self.call("search", query=query, all=all, current=current, limit=limit))

    def history(self, as_of: str | int, target: str | None = None) -> Json:
        """The graph (or one node) as it was at a time (ms since the epoch,
        YYYY-MM-DD in UTC) or as of an entry."""
        return self.call("history", as_of=_text(as_of), target=target)

    def questions(self) -> list[ListedNode]:
        """Open questions."""
        return cast(list[ListedNode], self._list("questions"))

    def decisions(self) -> list[Decision]:
        """What was decided, and the events it rests on."""
        return cast(list[Decision], self._list("decisions"))

    def disagreements(self) -> list[Contested]:
        """Contested nodes and what contests them."""
        return cast(list[Contested], self._list("disagreements"))

    def graph(self, format: str | None = None) -> Json:
        """The whole reasoning graph: ``json`` (default) data, or ``dot`` / ``mermaid`` text."""
        return self.call("graph", format=format)

    def perspective(self, agent: str | None = None, as_of: str | int | None = None, summary: bool = False) -> Json:
        """An agent's perspective (default: the acting agent's): its chain plus
        the prefixes it accepts, minus the events it disputes."""
        return self.call("perspective", agent=agent, as_of=None if as_of is None else _text(as_of), summary=summary)

    def consensus(
        self, quorum: int, agents: Sequence[str] = (), as_of: str | int | None = None, summary: bool = False
    ) -> Json:
        """Which prefix of each chain at least ``quorum`` agents accept, what is
        disputed and by whom, and the merged view's hash."""
        return self.call(
            "consensus", quorum=quorum, agents=list(agents), as_of=None if as_of is None else _text(as_of), summary=summary
        )

    def disputes(self, agents: Sequence[str] = (), as_of: str | int | None = None, summary: bool = False) -> Json:
        """The disagreement map: each disputed event, who accepts and who
        disputes it; forked chains by branch."""
        return self.call("disputes", agents=list(agents), as_of=None if as_of is None else _text(as_of), summary=summary)

    def audit(self, agent: str) -> Audit:
        """An agent's chain verified end to end: forks, gaps, disputes, accept
        frontiers, and the ranges of it its key events leave out."""
        return cast(Audit, self.call("audit", agent=agent))

    def view_hash(self) -> ViewHash:
        """The merged view's hash: equal on every node holding the same entries."""
        return cast(ViewHash, self.call("view_hash"))

    # ------------------------------------------------------------------
    # The roster (the founder admits and removes)

    def admit(self, agent: str, note: str = "") -> RosterRecorded:
        """Admit an agent (its 64-hex id, or a name of the node's keyring); the
        note's first line is its display name."""
        return cast(RosterRecorded, self.call("admit", agent=agent, note=note))

    def remove(self, agent: str, reason: str = "", at: str | None = None) -> RosterRecorded:
        """Remove an agent from the workspace (the founder, or an admin's
        vote): its chain up to ``at`` (an entry id or prefix; default its tip
        here) stays admitted, nothing after it."""
        return cast(RosterRecorded, self.call("remove", agent=agent, reason=reason, at=at))

    def admins(self, admins: Sequence[str], threshold: int, note: str = "") -> AdminsRecorded:
        """Founder only: name the admins (ids or keyring names, each a
        member; none to name none), ``threshold`` of whom together may
        remove or recover an agent."""
        return cast(AdminsRecorded, self.call("admins", admins=list(admins), threshold=threshold, note=note))

    def roster(self) -> Roster:
        """The workspace's members, derived from the founder's chain, each
        with its current key, rotations and recoveries."""
        return cast(Roster, self.call("roster"))

    def key_history(self, agent: str | None = None) -> KeyHistory:
        """An agent's key events (the acting agent's by default) and the
        recoveries the roster binds."""
        return cast(KeyHistory, self.call("key_history", agent=agent))

    def key_recover(self, agent: str, after: str, key: str, note: str = "") -> RecoveryRecorded:
        """The founder, or an admin's vote: bind ``agent``, both of whose keys
        are lost, to the new public ``key`` after ``after``, its last
        legitimate entry."""
        return cast(RecoveryRecorded, self.call("key_recover", agent=agent, after=after, key=key, note=note))
