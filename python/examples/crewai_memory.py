"""CrewAI's memory kept as Agora claims, its scopes as topics, with no model.

Run a node first (`agora node run`), then, in an environment with crewai
(python/requirements-crewai.txt):

    pip install ./python crewai==1.15.30
    CREWAI_TRACING_ENABLED=false python python/examples/crewai_memory.py [HOME]

Giving each memory its scope, categories and importance keeps CrewAI from
asking a model to infer them; the storage's embedder is a local feature
hash unless you pass `embed=` (any texts-to-vectors function).
"""

from __future__ import annotations

import sys

from crewai import Memory

import agora
from agora.integrations.crewai import AgoraMemoryStorage

node = agora.Client.from_home(sys.argv[1] if len(sys.argv) > 1 else None)
storage = AgoraMemoryStorage(node)
memory = Memory(storage=storage, embedder=storage.embedder)  # the one line (crews: Crew(memory=memory, ...))

memory.remember("Alice prefers dark mode in every editor", scope="/users/alice", categories=["preferences"], importance=0.8)
memory.remember("The release train leaves every second Tuesday", scope="/team", categories=["process"], importance=0.6)
for match in memory.recall("release train", scope="/team", depth="shallow"):
    print(f"{match.score:.2f} {match.record.scope} {match.record.content}")
print(memory.list_scopes("/"))
for hit in node.search("dark mode")["hits"]:
    print(hit["kind"], hit["status"], hit["text"].splitlines()[0])  # a signed claim of this node's agent
