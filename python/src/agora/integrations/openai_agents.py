"""The OpenAI Agents SDK's traces recorded in Agora: a tracing processor.

    import agents, agora
    from agora.integrations.openai_agents import AgoraTracingProcessor

    agents.add_trace_processor(AgoraTracingProcessor(agora.Client.from_home("~/.agora")))

Every span the SDK ends is sent to the node's OTLP receiver
(``POST /v1/traces``, protocol-spec/otlp.md) as an OTLP/JSON span following
the GenAI conventions, where it becomes an ``action`` signed by the agent
it names:

=============  ===================  =========================================
SDK span       gen_ai.operation     attributes
=============  ===================  =========================================
agent          ``invoke_agent``     ``gen_ai.agent.name``
function       ``execute_tool``     ``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``
generation     ``chat``             ``gen_ai.request.model``, ``gen_ai.input.messages``, ``gen_ai.output.messages``
response       ``chat``             ``gen_ai.request.model`` (the response's model), its input and output
handoff        ``handoff``          ``agora.handoff.to`` (the agent handed to); ``gen_ai.agent.name`` the one handing off
guardrail      ``guardrail``        ``agora.name`` (the guardrail), ``agora.output`` ``{"triggered": ...}``
custom         ``custom``           ``agora.name`` (the span's name); its data's ``agora.*``/``gen_ai.*`` keys as they are, the rest as ``agora.input``
=============  ===================  =========================================

Every span carries ``gen_ai.agent.name``: its own agent span's, else its
nearest enclosing agent span's (through ``agent_names``, so SDK agent names
can be mapped to the node's keyring agents here rather than in its
``[otlp] agents``). The trace's ``group_id`` is ``gen_ai.conversation.id``.
A span with an error has status code 2 (ERROR) and the error's message.
The SDK's structural spans (task, turn) and its audio and MCP listing spans
are not sent; a span under one has the nearest sent span as its parent.

**Ids.** The SDK's ids are strings (``trace_<32 hex>``, ``span_<24 hex>``);
OTLP's are 16 and 8 bytes. The OTLP trace id is the first 16 bytes of
SHA-256 of the SDK's trace id, and the span id the first 8 bytes of SHA-256
of ``<SDK trace id>/<SDK span id>`` (:func:`otlp_trace_id`,
:func:`otlp_span_id`): deterministic, so a span sent twice (a retry, two
processors) is the same span to the node, which records it once.

**Contents.** With ``keep_contents=False`` (the default) no argument,
result or message leaves the process: the processor sends their SHA-256 as
``agora.input.sha256`` / ``agora.output.sha256``, the digest the node would
compute from the contents themselves. With ``keep_contents=True`` the
contents are sent, and the node keeps them in the action's text when its
``[otlp] keep_contents`` says so.

**Reasoning moves.** A custom span whose data holds ``agora.move`` (an
operation of the node's API that appends: ``propose``, ``support``,
``contradict``...) and its ``agora.move.<field>`` inputs records that move
in the agent's chain, under the rules of the command line::

    with custom_span("objection", {"agora.move": "contradict",
                                   "agora.move.target": claim_id,
                                   "agora.move.text": "Not before the audit"}):
        ...

(such a span records operation ``move``; give ``gen_ai.operation.name`` in
the data to name another). ``agora.cause`` (an event id) links any span's
action to the event that caused it. An agent span's ``metadata`` may carry
the same ``agora.*`` keys.

**Cost.** ``on_span_start`` and ``on_span_end`` only look up and append to
in-memory structures; a background thread builds the OTLP request and sends
it, a batch at a time (``max_batch`` spans, or every ``schedule_delay``
seconds). The queue holds at most ``max_queue`` spans: past that, spans are
dropped and counted (:attr:`AgoraTracingProcessor.stats`), never waited
for. ``force_flush`` and ``shutdown`` send what is queued.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypedDict

from agents.tracing import (
    AgentSpanData,
    CustomSpanData,
    FunctionSpanData,
    GenerationSpanData,
    GuardrailSpanData,
    HandoffSpanData,
    ResponseSpanData,
    Span,
    Trace,
    TracingProcessor,
)

from ..client import Client
from ..errors import AgoraError, NodeUnreachable, Unavailable

__all__ = ["AgoraTracingProcessor", "ProcessorStats", "otlp_span_id", "otlp_trace_id"]

log = logging.getLogger(__name__)

SCOPE = "agora.integrations.openai_agents"

ERROR = 2
"""OTLP's status code ERROR."""

MAX_REQUEST_BYTES = 8 * 1024 * 1024
"""A request is cut below this (the node takes at most 16 MiB)."""


def otlp_trace_id(sdk_trace_id: str) -> str:
    """The OTLP trace id (32 lowercase hex digits) of an SDK trace id: the
    first 16 bytes of its SHA-256."""
    return hashlib.sha256(sdk_trace_id.encode("utf-8")).hexdigest()[:32]


def otlp_span_id(sdk_trace_id: str, sdk_span_id: str) -> str:
    """The OTLP span id (16 lowercase hex digits) of an SDK span: the first
    8 bytes of SHA-256 of ``<trace id>/<span id>``."""
    return hashlib.sha256(f"{sdk_trace_id}/{sdk_span_id}".encode("utf-8")).hexdigest()[:16]


class ProcessorStats(TypedDict):
    """What a processor did so far."""

    queued: int
    """Spans waiting to be sent."""
    sent: int
    """Spans the node took (recorded, or left out by design)."""
    rejected: int
    """Spans the node refused (its partial success counts them)."""
    failed: int
    """Spans of requests that failed (the node unreachable, or refusing the request whole)."""
    dropped: int
    """Spans dropped because the queue was full."""
    last_error: str | None


# The span's context kept from its start to its end: the agent it belongs
# to, the sent span it runs under, and what its children inherit.
_Context = tuple[str | None, str | None, str | None, str | None]

_SENT_TYPES = (AgentSpanData, FunctionSpanData, GenerationSpanData, ResponseSpanData, HandoffSpanData, GuardrailSpanData, CustomSpanData)


def _value(v: Any) -> dict[str, Any]:
    """An OTLP/JSON AnyValue."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": _json(v)}


def _json(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=str)


def _text(v: Any) -> str:
    return v if isinstance(v, str) else _json(v)


def _nanos(iso: str | None) -> str:
    if not iso:
        return "0"
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        return "0"
    return str(int(dt.timestamp() * 1_000_000) * 1000)


class AgoraTracingProcessor(TracingProcessor):
    """A tracing processor of the OpenAI Agents SDK that records spans in an
    Agora node (the module's documentation says how each becomes an action).

    Args:
        client: the node's client (:meth:`agora.Client.from_home`); None: the
            node running on ``home``.
        home: the node's home when ``client`` is None (default ``$AGORA_HOME``,
            else ``~/.agora``).
        agent_names: SDK agent names to the node's keyring agents (a name
            absent here is sent as it is).
        keep_contents: send arguments, results and messages (True), or only
            their SHA-256 (False, the default).
        service_name: the resource's ``service.name``: the node's agent for
            spans outside every agent span (else its ``[otlp] default_agent``).
        max_queue: spans held at most before new ones are dropped.
        max_batch: spans per request at most.
        schedule_delay: seconds between sends when fewer than ``max_batch``
            spans wait.
    """

    def __init__(
        self,
        client: Client | None = None,
        *,
        home: str | None = None,
        agent_names: Mapping[str, str] | None = None,
        keep_contents: bool = False,
        service_name: str | None = None,
        max_queue: int = 100_000,
        max_batch: int = 1_000,
        schedule_delay: float = 0.5,
    ) -> None:
        self._client = client if client is not None else Client.from_home(home)
        self._agent_names = dict(agent_names or {})
        self._keep_contents = keep_contents
        self._service_name = service_name
        self._max_queue = max_queue
        self._max_batch = max(1, max_batch)
        self._delay = schedule_delay
        self._contexts: dict[str, _Context] = {}
        self._groups: dict[str, str] = {}
        self._queue: collections.deque[tuple[Span[Any], _Context | None, str | None]] = collections.deque()
        self._send_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._sent = 0
        self._rejected = 0
        self._failed = 0
        self._dropped = 0
        self._last_error: str | None = None
        self._thread = threading.Thread(target=self._run, name="agora-tracing", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------
    # The traced program's side: lookups and an append, nothing more.

    def on_trace_start(self, trace: Trace) -> None:
        group = getattr(trace, "group_id", None)
        if isinstance(group, str) and group:
            self._groups[trace.trace_id] = group

    def on_trace_end(self, trace: Trace) -> None:
        self._groups.pop(trace.trace_id, None)

    def on_span_start(self, span: Span[Any]) -> None:
        try:
            parent_id = span.parent_id
            inherited = self._contexts.get(parent_id) if parent_id else None
            if inherited is not None:
                agent, parent = inherited[2], inherited[3]
            else:
                agent, parent = None, parent_id
            data = span.span_data
            if isinstance(data, AgentSpanData):
                self._contexts[span.span_id] = (data.name, parent, data.name, span.span_id)
            elif isinstance(data, _SENT_TYPES):
                self._contexts[span.span_id] = (agent, parent, agent, span.span_id)
            else:  # not sent: its children hang under its own parent
                self._contexts[span.span_id] = (agent, parent, agent, parent)
        except Exception:  # a processor never breaks the traced program
            pass

    def on_span_end(self, span: Span[Any]) -> None:
        try:
            context = self._contexts.pop(span.span_id, None)
            if len(self._queue) >= self._max_queue:
                self._dropped += 1
                return
            self._queue.append((span, context, self._groups.get(span.trace_id)))
            if len(self._queue) >= self._max_batch and not self._wake.is_set():
                self._wake.set()
        except Exception:
            pass

    def force_flush(self) -> None:
        """Send every span ended so far; returns when the node answered."""
        with self._send_lock:
            self._drain()

    def shutdown(self) -> None:
        """Send what is queued and stop the sending thread."""
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=30)
        self.force_flush()

    @property
    def stats(self) -> ProcessorStats:
        """Counts of the spans queued, sent, rejected, failed and dropped."""
        return ProcessorStats(
            queued=len(self._queue),
            sent=self._sent,
            rejected=self._rejected,
            failed=self._failed,
            dropped=self._dropped,
            last_error=self._last_error,
        )

    # ------------------------------------------------------------------
    # The sending thread.

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self._delay)
            self._wake.clear()
            with self._send_lock:
                self._drain()

    def _drain(self) -> None:
        while self._queue:
            parts: list[str] = []
            size = 0
            while self._queue and len(parts) < self._max_batch and size < MAX_REQUEST_BYTES:
                span, context, group = self._queue.popleft()
                try:
                    encoded = self._encode(span, context, group)
                except Exception as e:  # a span that cannot be encoded is counted, not sent
                    self._failed += 1
                    self._last_error = f"span {span.span_id} not encoded: {e}"
                    continue
                if encoded is not None:
                    parts.append(encoded)
                    size += len(encoded)
            if parts:
                try:
                    self._send(parts)
                except Exception as e:  # the sending thread outlives any failure
                    self._failed += len(parts)
                    self._last_error = f"{len(parts)} spans not sent: {e}"

    def _resource(self) -> str:
        if self._service_name is None:
            return "{}"
        return _json({"attributes": [{"key": "service.name", "value": {"stringValue": self._service_name}}]})

    def _send(self, parts: list[str]) -> None:
        body = (
            '{"resourceSpans":[{"resource":' + self._resource()
            + ',"scopeSpans":[{"scope":{"name":"' + SCOPE + '"},"spans":[' + ",".join(parts) + "]}]}]}"
        ).encode("utf-8")  # fmt: skip
        for attempt in range(3):
            try:
                answer = self._client.export_traces(body)
            except (NodeUnreachable, Unavailable) as e:
                self._last_error = str(e)
                if attempt < 2 and not self._stopping:
                    threading.Event().wait(0.2 * (attempt + 1))
                    continue
                self._failed += len(parts)
                log.warning("agora: %d spans not sent: %s", len(parts), e)
                return
            except AgoraError as e:
                self._failed += len(parts)
                self._last_error = str(e)
                log.warning("agora: %d spans refused: %s", len(parts), e)
                return
            partial = answer.get("partialSuccess") or answer.get("partial_success") or {}
            rejected = int(partial.get("rejectedSpans") or partial.get("rejected_spans") or 0)
            if rejected:
                self._last_error = str(partial.get("errorMessage") or partial.get("error_message") or "")
                log.warning("agora: %d of %d spans refused: %s", rejected, len(parts), self._last_error)
            self._rejected += rejected
            self._sent += len(parts) - rejected
            return

    def _agent(self, name: str | None) -> str | None:
        return None if name is None else self._agent_names.get(name, name)

    def _contents(self, attrs: list[dict[str, Any]], key: str, side: str, value: Any) -> None:
        """Contents as ``key``, or (not keeping them) their SHA-256 as ``agora.<side>.sha256``."""
        if value is None:
            return
        text = _text(value)
        if self._keep_contents:
            attrs.append({"key": key, "value": {"stringValue": text}})
        else:
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            attrs.append({"key": f"agora.{side}.sha256", "value": {"stringValue": digest}})

    def _encode(self, span: Span[Any], context: _Context | None, group: str | None) -> str | None:
        """The span as OTLP/JSON text, or None for a span that is not sent."""
        data = span.span_data
        if not isinstance(data, _SENT_TYPES):
            return None
        if context is not None:
            agent, parent = context[0], context[1]
        else:
            agent, parent = (data.name if isinstance(data, AgentSpanData) else None), span.parent_id
        attrs: list[dict[str, Any]] = []

        def put(key: str, value: Any) -> None:
            if value is not None:
                attrs.append({"key": key, "value": _value(value)})

        operation: str | None
        extra: Mapping[str, Any] | None = None
        if isinstance(data, AgentSpanData):
            operation = "invoke_agent"
            extra = data.metadata
        elif isinstance(data, FunctionSpanData):
            operation = "execute_tool"
            put("gen_ai.tool.name", data.name)
            self._contents(attrs, "gen_ai.tool.call.arguments", "input", data.input)
            self._contents(attrs, "gen_ai.tool.call.result", "output", None if data.output is None else str(data.output))
        elif isinstance(data, GenerationSpanData):
            operation = "chat"
            put("gen_ai.request.model", data.model)
            self._contents(attrs, "gen_ai.input.messages", "input", None if data.input is None else list(data.input))
            self._contents(attrs, "gen_ai.output.messages", "output", None if data.output is None else list(data.output))
        elif isinstance(data, ResponseSpanData):
            operation = "chat"
            response = data.response
            if response is not None:
                put("gen_ai.request.model", str(response.model))
                self._contents(attrs, "gen_ai.output.messages", "output", [o.model_dump(mode="json") for o in response.output])
            self._contents(attrs, "gen_ai.input.messages", "input", data.input)
        elif isinstance(data, HandoffSpanData):
            operation = "handoff"
            if data.from_agent:
                agent = data.from_agent
            put("agora.handoff.to", self._agent(data.to_agent))
        elif isinstance(data, GuardrailSpanData):
            operation = "guardrail"
            put("agora.name", data.name)
            self._contents(attrs, "agora.output", "output", {"triggered": data.triggered})
        else:  # CustomSpanData
            operation = "custom"
            extra = data.data
            rest = {k: v for k, v in data.data.items() if not k.startswith(("agora.", "gen_ai."))}
            if "agora.move" in data.data:
                operation = None
            if "agora.name" not in data.data:
                put("agora.name", data.name)
            if rest:
                self._contents(attrs, "agora.input", "input", rest)
        if extra:
            for key, value in extra.items():
                if key == "gen_ai.agent.name":
                    agent = str(value)
                elif isinstance(key, str) and key.startswith(("agora.", "gen_ai.")):
                    put(key, value)
                    if key == "gen_ai.operation.name":
                        operation = None
        if operation is not None:
            put("gen_ai.operation.name", operation)
        put("gen_ai.agent.name", self._agent(agent))
        if group:
            put("gen_ai.conversation.id", group)

        trace_id = otlp_trace_id(span.trace_id)
        otlp: dict[str, Any] = {
            "traceId": trace_id,
            "spanId": otlp_span_id(span.trace_id, span.span_id),
            "name": f"{data.type} {getattr(data, 'name', '') or ''}".strip(),
            "kind": 1,
            "startTimeUnixNano": _nanos(span.started_at),
            "endTimeUnixNano": _nanos(span.ended_at),
            "attributes": attrs,
        }
        if parent:
            otlp["parentSpanId"] = otlp_span_id(span.trace_id, parent)
        error = span.error
        if error:
            otlp["status"] = {"code": ERROR, "message": str(error.get("message") or "error")}
        return _json(otlp)
