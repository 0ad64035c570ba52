"""LangGraph's checkpoints and store kept in Agora, as signed actions.

    import agora
    from agora.integrations.langgraph import AgoraCheckpointSaver, AgoraStore

    node = agora.Client.from_home("~/.agora")
    graph = builder.compile(checkpointer=AgoraCheckpointSaver(node), store=AgoraStore(node))

**Checkpoints.** Each ``put`` records an ``action`` (the node's ``act``
operation) in the acting agent's chain: operation ``checkpoint``, name the
thread id, conversation the checkpoint namespace, text the checkpoint as
JSON (the checkpoint and its metadata through the saver's serde, bytes in
base64, with the blobs of the channels it changed), and ``cause`` the
parent checkpoint's event, so a thread is a chain of caused events and a
fork (two checkpoints from one parent) two branches of it. ``put_writes``
records an action ``checkpoint_write`` caused by its checkpoint's event.
Reads (``get_tuple``, ``list``) read the node's ``actions`` back.
``delete_thread`` redacts those events' payloads (the ``redact``
operation): their signed headers stay, their contents are gone from the
node. An action's text holds at most 512 KiB: a larger checkpoint is
refused with :class:`CheckpointTooLarge` before anything is sent.

**Store.** :class:`AgoraStore` keeps items as actions ``store_put`` (name
``<namespace joined by />/<key>``, text the namespace, key and value as
JSON; a delete is a ``store_put`` whose value is null); an item's value is
its latest ``store_put`` in log order. ``search`` filters by namespace
prefix and by value (``filter``: equality, or ``$eq``, ``$ne``, ``$gt``,
``$gte``, ``$lt``, ``$lte``); a ``query`` ranks by the words it shares with
the value (no embeddings). TTLs are not kept.

The client's agent (``Client.with_agent``) is the agent whose chain holds
the events.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ..client import Client

__all__ = ["ACTION_TEXT_MAX", "AgoraCheckpointSaver", "AgoraStore", "CheckpointTooLarge"]

ACTION_TEXT_MAX = 512 * 1024
"""Bytes an action's text holds at most (crates/agora-graph/src/event.rs)."""

_READ_LIMIT = 100_000
"""Actions read at most per query (the ``actions`` operation's largest limit)."""


class CheckpointTooLarge(ValueError):
    """A checkpoint (or writes, or an item) whose JSON text is over an action's limit."""


def _typed(value: tuple[str, bytes]) -> list[str]:
    return [value[0], base64.b64encode(value[1]).decode("ascii")]


def _untyped(value: Sequence[str]) -> tuple[str, bytes]:
    return (value[0], base64.b64decode(value[1]))


def _checked(text: str, what: str) -> str:
    size = len(text.encode("utf-8"))
    if size > ACTION_TEXT_MAX:
        raise CheckpointTooLarge(f"{what} is {size} bytes as JSON; an Agora action's text holds at most {ACTION_TEXT_MAX} bytes")
    return text


def _load(action: dict[str, Any]) -> dict[str, Any] | None:
    """An action's JSON record, or None when redacted or not one of ours."""
    text = action.get("text")
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


class AgoraCheckpointSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer whose checkpoints are signed Agora actions
    (the module's documentation says how). Versions are strings, as the
    in-memory saver's (``<32-digit counter>.<random>``)."""

    def __init__(self, client: Client, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self.client = client
        self._events: dict[tuple[str, str, str], str] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------
    # Reading the node.

    def _actions(self, operation: str, name: str | None) -> list[dict[str, Any]]:
        result = self.client.call("actions", operation=operation, name=name, limit=_READ_LIMIT).get("result", [])
        return list(result) if isinstance(result, list) else []

    def _thread(self, thread_id: str | None) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
        """The checkpoints (event id, record) and writes of one thread (every
        thread when None), in log order."""
        checkpoints = []
        for a in self._actions("checkpoint", thread_id):
            record = _load(a)
            if record is not None and (thread_id is None or record.get("thread_id") == thread_id):
                checkpoints.append((str(a["id"]), record))
                with self._lock:
                    self._events[(record["thread_id"], record["checkpoint_ns"], record["checkpoint_id"])] = str(a["id"])
        writes = [r for r in map(_load, self._actions("checkpoint_write", thread_id)) if r is not None]
        return checkpoints, writes

    def _event_of(self, thread_id: str, ns: str, checkpoint_id: str | None) -> str | None:
        if not checkpoint_id:
            return None
        key = (thread_id, ns, checkpoint_id)
        with self._lock:
            found = self._events.get(key)
        if found is None:
            self._thread(thread_id)
            with self._lock:
                found = self._events.get(key)
        return found

    def _tuples(
        self,
        thread_id: str | None,
        ns: str | None,
        checkpoint_id: str | None,
    ) -> list[CheckpointTuple]:
        """The matching checkpoints, newest first within each thread and namespace."""
        checkpoints, writes = self._thread(thread_id)
        blobs: dict[tuple[str, str, str, str], tuple[str, bytes]] = {}
        for _, r in checkpoints:
            for channel, (version, *typed) in r.get("blobs", {}).items():
                blobs[(r["thread_id"], r["checkpoint_ns"], channel, json.dumps(version))] = _untyped(typed)
        pending: dict[tuple[str, str, str], dict[tuple[str, int], tuple[str, str, tuple[str, bytes], str]]] = {}
        for w in writes:
            stored = pending.setdefault((w["thread_id"], w["checkpoint_ns"], w["checkpoint_id"]), {})
            for idx, channel, *typed in w["writes"]:
                key = (w["task_id"], idx)
                if idx >= 0 and key in stored:
                    continue
                stored[key] = (w["task_id"], channel, _untyped(typed), w.get("task_path", ""))
        chosen = [
            r
            for _, r in checkpoints
            if (ns is None or r["checkpoint_ns"] == ns) and (checkpoint_id is None or r["checkpoint_id"] == checkpoint_id)
        ]
        # Threads and namespaces in the order they first appear; newest checkpoint first in each.
        order: dict[tuple[str, str], int] = {}
        for r in chosen:
            order.setdefault((r["thread_id"], r["checkpoint_ns"]), len(order))
        chosen.sort(key=lambda r: r["checkpoint_id"], reverse=True)
        chosen.sort(key=lambda r: order[(r["thread_id"], r["checkpoint_ns"])])
        seen: set[tuple[str, str, str]] = set()
        out = []
        for r in chosen:
            ident = (r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"])
            if ident in seen:  # the same checkpoint put twice: its latest version
                continue
            seen.add(ident)
            out.append(self._tuple(r, blobs, pending.get(ident, {})))
        return out

    def _tuple(
        self,
        r: dict[str, Any],
        blobs: dict[tuple[str, str, str, str], tuple[str, bytes]],
        writes: dict[tuple[str, int], tuple[str, str, tuple[str, bytes], str]],
    ) -> CheckpointTuple:
        thread_id, ns = r["thread_id"], r["checkpoint_ns"]
        checkpoint: Checkpoint = self.serde.loads_typed(_untyped(r["checkpoint"]))
        values: dict[str, Any] = {}
        for channel, version in checkpoint["channel_versions"].items():
            blob = blobs.get((thread_id, ns, channel, json.dumps(version)))
            if blob is not None and blob[0] != "empty":
                values[channel] = self.serde.loads_typed(blob)
        ordered = sorted(writes.items(), key=lambda kv: (kv[1][3], kv[0][0], kv[0][1]))
        parent = r.get("parent_checkpoint_id")
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": r["checkpoint_id"]}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.serde.loads_typed(_untyped(r["metadata"])),
            parent_config=(
                {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}} if parent else None
            ),
            pending_writes=[(task, channel, self.serde.loads_typed(value)) for (_, _), (task, channel, value, _) in ordered],
        )

    # ------------------------------------------------------------------
    # BaseCheckpointSaver

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config["configurable"]
        found = self._tuples(configurable["thread_id"], configurable.get("checkpoint_ns", ""), get_checkpoint_id(config))
        if not found:
            return None
        if get_checkpoint_id(config):
            return found[0]._replace(config=config)
        return found[0]

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        configurable = config["configurable"] if config else {}
        before_id = get_checkpoint_id(before) if before else None
        count = 0
        for t in self._tuples(configurable.get("thread_id"), configurable.get("checkpoint_ns"), get_checkpoint_id(config) if config else None):
            if before_id and t.config["configurable"]["checkpoint_id"] >= before_id:
                continue
            if filter and not all(t.metadata.get(k) == v for k, v in filter.items()):
                continue
            if limit is not None and count >= limit:
                return
            count += 1
            yield t

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        configurable = config["configurable"]
        thread_id: str = configurable["thread_id"]
        ns: str = configurable.get("checkpoint_ns", "")
        parent: str | None = configurable.get("checkpoint_id")
        c = checkpoint.copy()
        values: dict[str, Any] = c.pop("channel_values")  # type: ignore[misc]
        blobs = {
            k: [v, *_typed(self.serde.dumps_typed(values[k]) if k in values else ("empty", b""))] for k, v in new_versions.items()
        }
        record = {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint["id"],
            "parent_checkpoint_id": parent,
            "checkpoint": _typed(self.serde.dumps_typed(c)),
            "metadata": _typed(self.serde.dumps_typed(get_checkpoint_metadata(config, metadata))),
            "blobs": blobs,
        }
        text = _checked(json.dumps(record, separators=(",", ":")), f"checkpoint {checkpoint['id']} of thread {thread_id!r}")
        answer = self.client.call(
            "act", operation="checkpoint", name=thread_id, conversation=ns, text=text, cause=self._event_of(thread_id, ns, parent)
        )
        with self._lock:
            self._events[(thread_id, ns, checkpoint["id"])] = str(answer["id"])
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        configurable = config["configurable"]
        thread_id: str = configurable["thread_id"]
        ns: str = configurable.get("checkpoint_ns", "")
        checkpoint_id: str = configurable["checkpoint_id"]
        record = {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
            "task_id": task_id,
            "task_path": task_path,
            "writes": [[WRITES_IDX_MAP.get(c, i), c, *_typed(self.serde.dumps_typed(v))] for i, (c, v) in enumerate(writes)],
        }
        text = _checked(json.dumps(record, separators=(",", ":")), f"the writes of task {task_id!r} on checkpoint {checkpoint_id}")
        self.client.call(
            "act", operation="checkpoint_write", name=thread_id, conversation=ns, text=text, cause=self._event_of(thread_id, ns, checkpoint_id)
        )

    def delete_thread(self, thread_id: str) -> None:
        for operation in ("checkpoint", "checkpoint_write"):
            for a in self._actions(operation, thread_id):
                record = _load(a)
                if record is not None and record.get("thread_id") == thread_id:
                    self.client.call("redact", target=a["id"])
        with self._lock:
            for key in [k for k in self._events if k[0] == thread_id]:
                del self._events[key]

    def get_next_version(self, current: str | None, channel: None) -> str:
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{0.5:016}"

    # Async: the same calls in a worker thread, so the event loop is not blocked.

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(lambda: [*self.list(config, filter=filter, before=before, limit=limit)])
        for t in found:
            yield t

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)


# ----------------------------------------------------------------------
# The store


def _when(ms: Any) -> datetime:
    return datetime.fromtimestamp(int(ms) / 1000, tz=timezone.utc)


def _compare(value: Any, condition: Any) -> bool:
    if not isinstance(condition, dict) or not all(isinstance(k, str) and k.startswith("$") for k in condition):
        return bool(value == condition)
    for op, want in condition.items():
        try:
            ok = {
                "$eq": lambda: value == want,
                "$ne": lambda: value != want,
                "$gt": lambda: value > want,
                "$gte": lambda: value >= want,
                "$lt": lambda: value < want,
                "$lte": lambda: value <= want,
            }[op]()
        except (KeyError, TypeError):
            return False
        if not ok:
            return False
    return True


def _words(value: Any) -> set[str]:
    return {w for w in json.dumps(value, ensure_ascii=False).lower().replace('"', " ").split() if w.isalnum()}


class AgoraStore(BaseStore):
    """A LangGraph store whose items are signed Agora actions ``store_put``
    (the module's documentation says how)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def _items(self, name: str | None = None) -> dict[tuple[tuple[str, ...], str], Item]:
        """Every live item (of one name when given): its latest put in log order."""
        answer = self.client.call("actions", operation="store_put", name=name, limit=_READ_LIMIT).get("result", [])
        items: dict[tuple[tuple[str, ...], str], Item] = {}
        created: dict[tuple[tuple[str, ...], str], datetime] = {}
        for a in answer if isinstance(answer, list) else []:
            record = _load(a)
            if record is None:
                continue
            key = (tuple(record["namespace"]), str(record["key"]))
            when = _when(a["timestamp_ms"])
            if record.get("value") is None:
                items.pop(key, None)
                created.pop(key, None)
                continue
            created.setdefault(key, when)
            items[key] = Item(value=record["value"], key=key[1], namespace=key[0], created_at=created[key], updated_at=when)
        return items

    @staticmethod
    def _name(namespace: tuple[str, ...], key: str) -> str:
        return "/".join((*namespace, key))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        items: dict[tuple[tuple[str, ...], str], Item] | None = None
        for op in ops:
            if isinstance(op, PutOp):
                record = {"namespace": list(op.namespace), "key": op.key, "value": op.value}
                text = _checked(json.dumps(record, ensure_ascii=False, separators=(",", ":")), f"item {op.key!r}")
                self.client.call("act", operation="store_put", name=self._name(op.namespace, op.key), text=text)
                items = None
                results.append(None)
            elif isinstance(op, GetOp):
                found = self._items(self._name(op.namespace, op.key)).get((tuple(op.namespace), op.key))
                results.append(found)
            elif isinstance(op, SearchOp):
                if items is None:
                    items = self._items()
                results.append(self._search(items, op))
            elif isinstance(op, ListNamespacesOp):
                if items is None:
                    items = self._items()
                results.append(self._namespaces(items, op))
            else:
                raise ValueError(f"unknown store operation {op!r}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    @staticmethod
    def _search(items: dict[tuple[tuple[str, ...], str], Item], op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        hits: list[tuple[float | None, Item]] = []
        query = _words(op.query) if op.query else set()
        for (ns, _), item in items.items():
            if ns[: len(prefix)] != prefix:
                continue
            if op.filter and not all(_compare(item.value.get(k), v) for k, v in op.filter.items()):
                continue
            score = len(query & _words(item.value)) / len(query) if query else None
            hits.append((score, item))
        if query:
            hits.sort(key=lambda h: -(h[0] or 0.0))
        else:
            hits.sort(key=lambda h: h[1].updated_at, reverse=True)
        page = hits[op.offset : op.offset + op.limit]
        return [
            SearchItem(namespace=i.namespace, key=i.key, value=i.value, created_at=i.created_at, updated_at=i.updated_at, score=s)
            for s, i in page
        ]

    @staticmethod
    def _namespaces(items: dict[tuple[tuple[str, ...], str], Item], op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        for ns, _ in items:
            ok = True
            for condition in op.match_conditions or ():
                path = tuple(condition.path)
                part = ns[: len(path)] if condition.match_type == "prefix" else ns[-len(path) :] if path else ()
                if len(ns) < len(path) or not all(p == "*" or p == q for p, q in zip(path, part)):
                    ok = False
            if ok:
                found.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(found)[op.offset : op.offset + op.limit]
