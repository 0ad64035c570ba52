"""CrewAI's memory kept in Agora: a storage backend whose scopes are topics.

    import agora
    from crewai import Memory
    from agora.integrations.crewai import AgoraMemoryStorage

    storage = AgoraMemoryStorage(agora.Client.from_home("~/.agora"))
    memory = Memory(storage=storage, embedder=storage.embedder)

CrewAI's unified memory (``crewai.Memory``) stores :class:`MemoryRecord`\\ s
through a ``StorageBackend`` (``crewai.memory.storage.backend``). Here each
record is a signed ``claim`` in the acting agent's chain: its text the
record's content, then a line ``crewai-memory: {...}`` with the record's id,
scope, categories, metadata, importance, times, source and privacy as JSON;
its ``owner`` the record's scope (``/users/alice``), so a scope is a topic
every agent of the workspace reads the same. An update is a new claim
related to the old one by ``update`` (which supersedes it); a delete (CrewAI's
``forget`` and ``reset``) retracts the claim (a claim ``forgotten <id>``
related by ``retracts``): the history stays signed, the record is gone from
every read.

**Search.** Retrieval is the node's full-text search (BM25, the ``search``
operation) filtered to the scope, categories and metadata asked for; the
candidates are then scored by the cosine of the query's vector and theirs,
as CrewAI scores them. CrewAI hands a backend only the query's vector, so
the embedder to give ``Memory`` is :attr:`AgoraMemoryStorage.embedder`,
which remembers the text of the vectors it made (the most recent 4,096).
Its vectors come from the embedding function you pass
(``AgoraMemoryStorage(client, embed=...)``: any callable from texts to
vectors, such as a CrewAI provider's), else from a deterministic local
feature hash of the words (no model, no key: enough for keyword recall,
not for meaning). A query whose text is unknown is scored against every
record in the scope.

Records, scopes and categories are read from the node's graph (the ``graph``
operation) on each call: fine for a crew's memory, not for millions of
claims.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import math
import re
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from crewai.memory.types import MemoryRecord, ScopeInfo

from ..client import Client

__all__ = ["AgoraEmbedder", "AgoraMemoryStorage", "MemoryTooLarge", "hashed_embedding"]

MARK = "\n\ncrewai-memory: "
"""What separates a record's content from its fields in a claim's text."""

CLAIM_TEXT_MAX = 16 * 1024
"""Bytes a claim's text holds at most."""

DIMENSIONS = 256

_WORD = re.compile(r"\w+", re.UNICODE)


class MemoryTooLarge(ValueError):
    """A record whose content and fields are over a claim's 16 KiB."""


def hashed_embedding(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """A deterministic vector of a text's words (feature hashing, L2-normed):
    texts sharing words are close. No model is involved."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        vector[int.from_bytes(digest[:4], "big") % dimensions] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


class AgoraEmbedder:
    """The embedder to give ``crewai.Memory``: ``embed``'s vectors (default
    :func:`hashed_embedding`), remembering which text each came from so the
    storage can search the node by text."""

    def __init__(self, embed: Callable[[list[str]], Sequence[Sequence[float]]] | None = None, remember: int = 4096) -> None:
        self._embed = embed
        self._texts: collections.OrderedDict[tuple[float, ...], str] = collections.OrderedDict()
        self._remember = remember
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        vectors = [list(map(float, v)) for v in self._embed(texts)] if self._embed else [hashed_embedding(t) for t in texts]
        with self._lock:
            for text, vector in zip(texts, vectors):
                self._texts[tuple(vector)] = text
                self._texts.move_to_end(tuple(vector))
            while len(self._texts) > self._remember:
                self._texts.popitem(last=False)
        return vectors

    def text_of(self, vector: Sequence[float]) -> str | None:
        """The text this embedder made ``vector`` from, if it remembers it."""
        with self._lock:
            return self._texts.get(tuple(float(x) for x in vector))


def _in_scope(scope: str, prefix: str | None) -> bool:
    if prefix is None or prefix.strip("/") == "":
        return True
    p = "/" + prefix.strip("/")
    return scope == p or scope.startswith(p + "/")


def _parse(text: str) -> MemoryRecord | None:
    content, mark, fields = text.rpartition(MARK)
    if not mark:
        return None
    try:
        data = json.loads(fields)
        return MemoryRecord(content=content, **data)
    except (ValueError, TypeError):
        return None


class AgoraMemoryStorage:
    """A CrewAI memory ``StorageBackend`` over an Agora node's claims (the
    module's documentation says how).

    Args:
        client: the node's client; its agent signs the claims.
        embed: the embedding function behind :attr:`embedder` (texts to
            vectors); None: :func:`hashed_embedding`.
        kind: the claims' memory kind (``semantic``, ``episodic``,
            ``preference``, ``procedural``...).
    """

    def __init__(
        self,
        client: Client,
        *,
        embed: Callable[[list[str]], Sequence[Sequence[float]]] | None = None,
        kind: str = "semantic",
    ) -> None:
        self.client = client
        self.embedder = AgoraEmbedder(embed)
        self.kind = kind

    # ------------------------------------------------------------------
    # The node

    def _claims(self) -> dict[str, tuple[str, MemoryRecord]]:
        """Every live record by its id: (the claim's event id, the record)."""
        found: dict[str, tuple[str, MemoryRecord]] = {}
        for node in self.client.graph().get("nodes", []):
            if node.get("kind") != "claim" or node.get("status") in ("superseded", "retracted"):
                continue
            record = _parse(str(node.get("text", "")))
            if record is not None:
                found[record.id] = (str(node["id"]), record)
        return found

    def _text(self, record: MemoryRecord) -> str:
        fields = record.model_dump(mode="json", exclude={"content", "embedding"})
        text = str(record.content) + MARK + json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
        size = len(text.encode("utf-8"))
        if size > CLAIM_TEXT_MAX:
            raise MemoryTooLarge(f"memory {record.id} is {size} bytes with its fields; an Agora claim holds at most {CLAIM_TEXT_MAX}")
        return text

    def _claim(self, record: MemoryRecord) -> str:
        answer = self.client.call("claim", text=self._text(record), kind=self.kind, owner=record.scope)
        return str(answer["id"])

    def _retract(self, event: str, record_id: str) -> None:
        tombstone = self.client.call("claim", text=f"forgotten {record_id}", kind=self.kind)
        self.client.call("relate", {"from": tombstone["id"], "to": event, "relation": "retracts", "reason": "forgotten"})

    @staticmethod
    def _matches(
        record: MemoryRecord,
        scope_prefix: str | None,
        categories: list[str] | None,
        metadata_filter: dict[str, Any] | None,
    ) -> bool:
        if not _in_scope(record.scope, scope_prefix):
            return False
        if categories and not set(categories) & set(record.categories):
            return False
        return not metadata_filter or all(record.metadata.get(k) == v for k, v in metadata_filter.items())

    # ------------------------------------------------------------------
    # StorageBackend

    def save(self, records: list[MemoryRecord]) -> None:
        for record in records:
            self._claim(record)

    def search(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        claims = self._claims()
        by_event = {event: record for event, record in claims.values()}
        query = self.embedder.text_of(query_embedding)
        if query is not None:
            hits = self.client.search(query, limit=max(50, limit * 5)).get("hits", [])
            candidates = [by_event[h["id"]] for h in hits if h.get("id") in by_event]
        else:
            candidates = [record for _, record in claims.values()]
        scored = []
        candidates = [r for r in candidates if self._matches(r, scope_prefix, categories, metadata_filter)]
        vectors = self.embedder([r.content for r in candidates]) if candidates else []
        for record, vector in zip(candidates, vectors):
            score = _cosine(query_embedding, vector)
            if score >= min_score:
                scored.append((record, score))
        scored.sort(key=lambda rs: rs[1], reverse=True)
        return scored[:limit]

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        count = 0
        for event, record in self._claims().values():
            if record_ids is not None and record.id not in record_ids:
                continue
            if older_than is not None and record.created_at >= older_than:
                continue
            if not self._matches(record, scope_prefix, categories, metadata_filter):
                continue
            self._retract(event, record.id)
            count += 1
        return count

    def update(self, record: MemoryRecord) -> None:
        found = self._claims().get(record.id)
        new = self._claim(record)
        if found is not None:
            self.client.call("relate", {"from": new, "to": found[0], "relation": "update", "reason": "updated"})

    def get_record(self, record_id: str) -> MemoryRecord | None:
        found = self._claims().get(record_id)
        return found[1] if found else None

    def list_records(self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0) -> list[MemoryRecord]:
        records = [r for _, r in self._claims().values() if _in_scope(r.scope, scope_prefix)]
        records.sort(key=lambda r: r.created_at, reverse=True)
        return records[offset : offset + limit]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        path = "/" + scope.strip("/") if scope.strip("/") else "/"
        records = self.list_records(path, limit=1_000_000)
        return ScopeInfo(
            path=path,
            record_count=len(records),
            categories=sorted({c for r in records for c in r.categories}),
            oldest_record=min((r.created_at for r in records), default=None),
            newest_record=max((r.created_at for r in records), default=None),
            child_scopes=self.list_scopes(path),
        )

    def list_scopes(self, parent: str = "/") -> list[str]:
        base = parent.rstrip("/")
        prefix = base + "/"
        children = set()
        for _, record in self._claims().values():
            if record.scope.startswith(prefix):
                first = record.scope[len(prefix) :].split("/", 1)[0]
                if first:
                    children.add(prefix + first)
        return sorted(children)

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for record in self.list_records(scope_prefix, limit=1_000_000):
            for c in record.categories:
                counts[c] = counts.get(c, 0) + 1
        return counts

    def count(self, scope_prefix: str | None = None) -> int:
        return len(self.list_records(scope_prefix, limit=1_000_000))

    def reset(self, scope_prefix: str | None = None) -> None:
        self.delete(scope_prefix=scope_prefix)

    async def asave(self, records: list[MemoryRecord]) -> None:
        await asyncio.to_thread(self.save, records)

    async def asearch(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        return await asyncio.to_thread(self.search, query_embedding, scope_prefix, categories, metadata_filter, limit, min_score)

    async def adelete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        return await asyncio.to_thread(self.delete, scope_prefix, categories, record_ids, older_than, metadata_filter)
