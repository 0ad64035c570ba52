"""A LangGraph graph whose checkpoints and store live in Agora, with no model.

Run a node first (`agora node run`), then:

    pip install ./python langgraph==1.2.24
    python python/examples/langgraph_checkpoints.py [HOME]

Each checkpoint is a signed `checkpoint` action caused by its parent's, so
the fork below is a second branch from one checkpoint.
"""

from __future__ import annotations

import json
import operator
import sys
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

import agora
from agora.integrations.langgraph import AgoraCheckpointSaver, AgoraStore


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


node = agora.Client.from_home(sys.argv[1] if len(sys.argv) > 1 else None)
builder = StateGraph(State)
builder.add_node("plan", lambda s: {"steps": ["plan"]})
builder.add_node("act", lambda s: {"steps": ["act"]})
builder.add_edge(START, "plan")
builder.add_edge("plan", "act")
builder.add_edge("act", END)
graph = builder.compile(checkpointer=AgoraCheckpointSaver(node), store=AgoraStore(node))  # the one line

config: Any = {"configurable": {"thread_id": "release-42"}}
print(graph.invoke({"steps": ["start"]}, config))
after_plan = next(h for h in graph.get_state_history(config) if h.values["steps"] == ["start", "plan"])
print(graph.invoke(None, graph.update_state(after_plan.config, {"steps": ["fork"]})))

for a in node.call("actions", operation="checkpoint", name="release-42")["result"]:
    record = json.loads(a["text"])
    print(a["seq"], a["id"][:8], "caused by", (a["cause"] or "-")[:8], record["checkpoint_id"])

store = AgoraStore(node)
store.put(("prefs", "alice"), "theme", {"value": "dark"})
print(store.get(("prefs", "alice"), "theme"))
