"""Agora's MCP server driven by the official MCP Python SDK (`mcp` from
PyPI), run by tests/mcp.rs with two running nodes: Alice's (this client's
server) and Bob's, a peer. Checks the core profile's size over stdio, plays
a debate over streamable HTTP (Bob moving through his own node), and
subscribes to the merged view and to one event to be notified of Bob's
move arriving from his node.

Environment: AGORA_BIN (the agora binary), ALICE_HOME, BOB_HOME, BOB_ID,
AGORA_MCP_URL (Alice's node's /mcp), AGORA_TOKEN (its bearer token).
"""

import asyncio
import json
import os
import subprocess
import sys
import time

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

BIN, ALICE, BOB, BOB_ID = (os.environ[k] for k in ("AGORA_BIN", "ALICE_HOME", "BOB_HOME", "BOB_ID"))
URL, TOKEN = os.environ["AGORA_MCP_URL"], os.environ["AGORA_TOKEN"]
ENV = {k: v for k, v in os.environ.items() if k not in ("AGORA_HOME", "AGORA_TOKEN")}
CORE = {"orient", "propose", "support", "contradict", "refine", "ask", "resolve", "accept", "dispute", "status", "trace", "identity"}


def bob(*args):
    """Bob's move on his own home (his node runs it): its JSON answer."""
    out = subprocess.run([BIN, "--home", BOB, "--json", *args], capture_output=True, text=True, env=ENV)
    assert out.returncode == 0, f"bob {args}: {out.stderr}"
    return json.loads(out.stdout)


async def call(session, tool, **args):
    """A tool call's structured content (the SDK checks it against the tool's output schema)."""
    r = await session.call_tool(tool, args)
    assert not r.isError, f"{tool} {args}: {r.content}"
    assert r.structuredContent is not None, f"{tool}: no structured content"
    return r.structuredContent


async def wait_for(what, check, seconds=60):
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def core_profile():
    params = StdioServerParameters(command=BIN, args=["--home", ALICE, "mcp"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.serverInfo.name == "agora", init
            assert "Statuses: active" in (init.instructions or ""), init.instructions
            listed = await session.list_tools()
            names = {t.name for t in listed.tools}
            assert names == CORE, names
            size = len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())
            print(f"python sdk: core profile {len(names)} tools, tools/list {size} bytes")
            assert size < 20_000, size
            for t in listed.tools:
                assert t.outputSchema and t.outputSchema.get("properties"), f"{t.name}: {t.outputSchema}"


async def debate_and_subscription():
    updates = asyncio.Queue()

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ResourceUpdatedNotification):
            updates.put_nowait((str(message.root.params.uri), time.monotonic()))

    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with streamablehttp_client(URL, headers=headers) as (read, write, _):
        async with ClientSession(read, write, message_handler=on_message) as session:
            await session.initialize()
            await session.list_tools()
            p = (await call(session, "propose", text="Usage-based pricing aligns our incentives"))["id"]
            # Bob contradicts on his node; it reaches Alice's by replication.
            async def bob_holds():
                out = subprocess.run([BIN, "--home", BOB, "show", p], capture_output=True, env=ENV)
                return out.returncode == 0
            await wait_for("Bob's node to hold Alice's proposition", bob_holds)
            c = bob("contradict", p, "Enterprise procurement needs predictable costs")["id"]

            async def contested():
                return (await call(session, "status", target=p))["status"] == "contested"
            await wait_for("the contradiction to arrive", contested)
            r = await call(session, "refine", target=p, text="Usage-based with a committed annual minimum", resolves=[c])
            assert r["kind"] == "refinement", r
            await call(session, "accept", agent=BOB_ID, up_to="1")
            s = await call(session, "status", target=p)
            assert s["status"] == "superseded" and s["successor"]["id"] == r["id"], s
            o = await call(session, "orient", topic="incentives")
            assert o["nodes"][0]["id"] == r["id"] and o["nodes"][0]["found_through"] == [p], o
            print("python sdk: debate through tools: propose, contradict (a peer), refine, accept, status, orient")

            # Subscriptions: the view and one event, notified of Bob's move.
            q = (await call(session, "propose", text="Drop the free tier"))["id"]
            event = f"agora://event/{q}"
            templates = await session.list_resource_templates()
            assert [t.uriTemplate for t in templates.resourceTemplates] == ["agora://event/{id}"], templates
            await session.subscribe_resource("agora://view")
            await session.subscribe_resource(event)
            async def bob_holds_q():
                out = subprocess.run([BIN, "--home", BOB, "show", q], capture_output=True, env=ENV)
                return out.returncode == 0
            await wait_for("Bob's node to hold Alice's second proposition", bob_holds_q)
            while not updates.empty():
                updates.get_nowait()
            moved = time.monotonic()
            bob("contradict", q, "The free tier is our funnel")
            heard = {}
            while set(heard) != {"agora://view", event}:
                uri, at = await asyncio.wait_for(updates.get(), timeout=30)
                heard.setdefault(uri, at - moved)
            print(f"python sdk: notified {heard[event]:.2f} s after Bob recorded his move on his node (replication included)")
            assert max(heard.values()) < 5, heard
            contents = await session.read_resource(event)
            assert json.loads(contents.contents[0].text)["status"] == "contested", contents

            prompts = await session.list_prompts()
            assert {p.name for p in prompts.prompts} == {"open_debate", "review_chain"}, prompts
            review = await session.get_prompt("review_chain", {"agent": BOB_ID})
            assert c in review.messages[0].content.text, review


async def main():
    await core_profile()
    await debate_and_subscription()
    print("python sdk: passed")


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
