"""The `sampling` classifier of Agora's `ingest` tool driven by the
official MCP Python SDK (`mcp` from PyPI): the client's sampling callback
is the model, answering scripted proposals. Run by tests/ingest.rs with a
running node: over streamable HTTP (the node asks the client, then records
what it answered), a malformed answer refused and named, a session with no
sampling callback told sampling is unavailable, and over `agora mcp` on
stdio (which forwards the answer to the node).

Environment: AGORA_BIN (the agora binary), ALICE_HOME, AGORA_MCP_URL (the
node's /mcp with ?tools=...), AGORA_TOKEN (its bearer token).
"""

import asyncio
import json
import os
import sys

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

BIN, ALICE = os.environ["AGORA_BIN"], os.environ["ALICE_HOME"]
URL, TOKEN = os.environ["AGORA_MCP_URL"], os.environ["AGORA_TOKEN"]
ENV = {k: v for k, v in os.environ.items() if k not in ("AGORA_HOME", "AGORA_TOKEN")}
HEADERS = {"Authorization": f"Bearer {TOKEN}"}

TEXT = "bob: Enterprise procurement can't budget usage-based costs.\ncarol: Would a committed minimum work?"
SCRIPTED = {
    "proposals": [
        {"kind": "contradiction", "text": "Enterprise procurement needs predictable costs", "targets": ["usage-based pricing"], "confidence": 0.85},
        {"kind": "question", "text": "Would a committed annual minimum work?", "targets": [], "confidence": 0.3},
    ]
}


class Model:
    """The client's model: scripted answers, and what it was asked."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.asked = []

    async def __call__(self, context, params: types.CreateMessageRequestParams):
        self.asked.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=self.answers.pop(0)),
            model="scripted-model",
            stopReason="endTurn",
        )


async def tool(session, name, **args):
    r = await session.call_tool(name, args)
    return r


async def ok(session, name, **args):
    r = await tool(session, name, **args)
    assert not r.isError, f"{name} {args}: {r.content}"
    assert r.structuredContent is not None, f"{name}: no structured content"
    return r.structuredContent


def check_asked(params: types.CreateMessageRequestParams):
    assert "typed reasoning events" in (params.systemPrompt or ""), params.systemPrompt
    (message,) = params.messages
    assert message.role == "user" and TEXT in message.content.text, message
    assert params.maxTokens > 0 and params.temperature == 0.0, params


async def over_http():
    model = Model([json.dumps(SCRIPTED), "Sure, here are the events you asked for."])
    async with streamablehttp_client(URL, headers=HEADERS) as (read, write, _):
        async with ClientSession(read, write, sampling_callback=model) as session:
            await session.initialize()
            p = (await ok(session, "propose", text="We should use usage-based pricing for every customer"))["id"]
            answer = await ok(session, "ingest", text=TEXT, classifier="sampling", model="any-small-model")
            check_asked(model.asked[0])
            assert [h.name for h in model.asked[0].modelPreferences.hints] == ["any-small-model"], model.asked[0]
            assert answer["classifier"] == "sampling" and answer["model"] == "scripted-model", answer
            (recorded,) = answer["recorded"]
            assert recorded["kind"] == "contradiction" and recorded["targets"] == [p], recorded
            assert recorded["resolutions"][0]["candidates"][0]["id"] == p, recorded
            (dropped,) = answer["dropped"]
            assert dropped["reason"] == "below_threshold" and dropped["kind"] == "question", dropped
            status = await ok(session, "status", target=p)
            assert status["status"] == "contested", status
            actions = await ok(session, "actions", operation="classify")
            (audit,) = actions["result"]
            assert audit["id"] == answer["audit"] and audit["name"] == "sampling/scripted-model", audit
            print(f"sampling: over HTTP, recorded {recorded['id'][:8]} against {p[:8]}, audit {audit['id'][:8]}")

            bad = await tool(session, "ingest", text=TEXT, classifier="sampling")
            assert bad.isError and bad.structuredContent["rule"] == "classifier_malformed", bad
            assert "the MCP client's model" in bad.structuredContent["message"], bad.structuredContent
            print("sampling: a malformed answer refused:", bad.structuredContent["message"][:100])

    # No sampling callback: the client declares no sampling capability.
    async with streamablehttp_client(URL, headers=HEADERS) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            r = await tool(session, "ingest", text=TEXT, classifier="sampling")
            assert r.isError and r.structuredContent["rule"] == "sampling_unavailable", r
            assert "did not declare the sampling capability" in r.structuredContent["message"], r.structuredContent
            print("sampling: without the capability:", r.structuredContent["message"][:90])


async def over_stdio():
    model = Model([json.dumps({"proposals": [{"kind": "proposition", "text": "Offer a committed annual minimum", "targets": [], "confidence": 0.9}]})])
    params = StdioServerParameters(command=BIN, args=["--home", ALICE, "mcp", "--tools", "reasoning"], env=ENV)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, sampling_callback=model) as session:
            await session.initialize()
            answer = await ok(session, "ingest", text="alice: I propose a committed annual minimum.", classifier="sampling")
            (recorded,) = answer["recorded"]
            assert recorded["kind"] == "proposition" and recorded["text"] == "Offer a committed annual minimum", recorded
            print(f"sampling: over stdio, recorded {recorded['id'][:8]}")


async def main():
    await over_http()
    await over_stdio()
    print("sampling: passed")


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
