"""The client against real nodes: moves and reads, every failure as an
exception with the node's code, rule and entry, agents of one keyring,
the node file and its token, and two nodes replicating to one view."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest

import agora
from conftest import Home, Node, run, wait_for


def test_moves_and_reads(client: agora.Client, founder: Home) -> None:
    assert client.identity() == {"agent": founder.id}
    p = client.propose("Usage-based pricing aligns incentives")
    assert (p["kind"], p["seq"], len(p["id"])) == ("proposition", 1, 64), p
    s = client.support(p["id"], "Customers pay for what they use")
    c = client.contradict(p["id"], "Enterprise procurement needs predictable costs")
    assert client.status(p["id"])["status"] == "contested"
    assert [d["id"] for d in client.disagreements()] == [p["id"]]
    r = client.refine(p["id"], "Two-track: seats for enterprise, usage for self-serve", resolves=[c["id"]])
    assert client.status(p["id"])["status"] == "superseded"
    assert client.status(c["id"])["status"] == "resolved"
    refined = client.status(r["id"])
    assert (refined["status"], refined["author"], refined["kind"]) == ("resolved", founder.id, "refinement"), refined
    assert client.latest(p["id"])["latest"] == r["id"]

    q = client.ask("Which tier gets the discount?")
    assert [n["id"] for n in client.questions()] == [q["id"]]
    client.resolve(q["id"], "Self-serve, annual plans")
    assert client.status(q["id"])["status"] == "resolved"
    assert client.questions() == []

    trace = client.trace(p["id"])
    assert {e["id"] for e in trace["events"]} >= {p["id"], s["id"], c["id"], r["id"]}, trace
    assert all(e["verified"] for e in trace["events"]), trace
    found = client.search("pricing")
    assert p["id"] not in [h["id"] for h in found["hits"]], "superseded nodes are left out by default"
    assert p["id"] in [h["id"] for h in client.search("pricing", all=True)["hits"]]
    oriented = client.orient("pricing incentives")
    assert r["id"] in [n["id"] for n in oriented["nodes"]], oriented
    assert oriented["computed_over"]["frontier_hash"]

    first = client.view_hash()
    t = client.tension(r["id"], s["id"], "Seats cap usage")
    second = client.view_hash()
    assert second["entries"] == first["entries"] + 1 and second["view_hash"] != first["view_hash"]
    assert client.status(t["id"])["kind"] == "tension"
    graph = client.graph()
    assert {n["id"] for n in graph["nodes"]} >= {p["id"], r["id"], t["id"]}
    status = client.node_status()
    assert founder.id in str(status), status
    # The generic call reaches every operation, the same answer as the typed method.
    assert client.call("status", target=r["id"])["status"] == refined["status"]
    assert client.call("log", {"agent": founder.id, "from": 2, "limit": 1})["result"][0]["seq"] == 2
    assert "propose" in client.operations() and "view_hash" in client.operations()


def test_a_refusal_carries_its_rule_and_entry(client: agora.Client) -> None:
    p = client.propose("Ship on Friday")["id"]
    with pytest.raises(agora.Refused) as refused:
        client.resume(p)  # not parked
    e = refused.value
    assert (e.status, e.code, e.rule, e.entry) == (422, "refused", "wrong_state", p), repr(e)
    assert isinstance(e, agora.AgoraError) and e.message and e.rule in str(e)
    assert e.to_dict() == {"code": "refused", "rule": "wrong_state", "message": e.message, "entry": p}

    missing = "cd" * 32
    with pytest.raises(agora.NotFound) as not_found:
        client.status(missing)
    assert (not_found.value.status, not_found.value.code, not_found.value.rule) == (404, "not_found", "unknown_entry")
    with pytest.raises(agora.BadRequest) as bad:
        client.status("zz-not-hex")
    assert (bad.value.status, bad.value.code, bad.value.rule) == (400, "bad_input", "not_an_entry_id")
    with pytest.raises(agora.BadRequest) as bad:
        client.search("x", limit=0)
    assert bad.value.rule == "input_schema"
    with pytest.raises(agora.BadRequest) as bad:
        client.call("propose", text="x", no_such_field=1)
    assert bad.value.rule == "input_schema"
    with pytest.raises(agora.NotFound) as unknown:
        client.call("no_such_operation")
    assert (unknown.value.code, unknown.value.status) == ("unknown_operation", 404)
    # A refused move records nothing.
    assert client.call("log")["result"][-1]["id"] == p


def test_a_bad_token_is_unauthorized(node: Node) -> None:
    for token in ["not-the-token", None]:
        bad = agora.Client(node.control, token)
        with pytest.raises(agora.Unauthorized) as e:
            bad.propose("never recorded")
        assert (e.value.status, e.value.code, e.value.rule) == (401, "unauthorized", "credentials"), repr(e.value)
        with pytest.raises(agora.Unauthorized):
            bad.node_status()
    # The document holds no secret.
    assert "/v1/ops/propose" in agora.Client(node.control).openapi()["paths"]
    assert node.client().search("never recorded")["hits"] == []


def test_an_unknown_agent_is_refused(node: Node) -> None:
    before = node.client().view_hash()
    with pytest.raises(agora.UnknownAgent) as e:
        node.client("nobody").propose("x")
    assert isinstance(e.value, agora.NotFound)
    assert (e.value.status, e.value.code, e.value.rule) == (404, "not_found", "unknown_agent"), repr(e.value)
    assert "agent new nobody" in e.value.message
    assert node.client().view_hash()["view_hash"] == before["view_hash"]
    with pytest.raises(ValueError):
        node.client("two\nlines")


def test_two_agents_of_one_keyring(founder: Home, node: Node) -> None:
    alice_id = founder.new_agent("alice")
    bob_id = founder.new_agent("bob")
    client = node.client()
    client.admit("alice")
    client.admit("bob", "Bob the auditor\nsecond line ignored")
    alice, bob = client.with_agent("alice"), client.with_agent("bob")
    assert (alice.agent, bob.agent, bob.with_agent(None).agent) == ("alice", "bob", None)
    assert alice.identity()["agent"] == alice_id and bob.identity()["agent"] == bob_id
    assert client.identity()["agent"] == founder.id

    p = alice.propose("Ship the keyring")
    assert p["seq"] == 1, "alice's chain starts at 1"
    c = bob.contradict(p["id"], "Not before the audit")
    said = client.status(p["id"])
    assert (said["author"], said["status"]) == (alice_id, "contested"), said
    by = client.status(c["id"])
    assert (by["author"], by.get("author_name")) == (bob_id, "Bob the auditor"), by

    # The merge layer: bob accepts alice's chain through her proposal, then
    # disputes it with a counter-claim.
    accepted = bob.accept(alice_id, p["seq"])
    assert accepted["kind"] and accepted["seq"] == 2, accepted
    assert bob_id in client.status(p["id"]).get("accepted_by", [])
    d = bob.dispute(p["id"], "The audit is not done", counter="Ship after the audit")
    disputes = client.status(p["id"]).get("disputed_by", [])
    assert [(x["by"], x["dispute"], x.get("counter_claim")) for x in disputes] == [(bob_id, d["id"], "Ship after the audit")], disputes
    with pytest.raises(agora.Refused) as e:
        alice.accept(alice_id, 1)
    assert e.value.rule == "self_accept", repr(e.value)
    # Only the founder changes the roster.
    with pytest.raises(agora.Refused) as e:
        alice.admit("bob")
    assert e.value.rule == "founder_only", repr(e.value)
    members = {m["agent"] for m in client.roster()["members"]}
    assert {alice_id, bob_id} <= members
    # Bob's perspective: alice's chain through her proposal, less the event he disputes.
    perspective = bob.perspective()
    assert perspective["agent"] == bob_id, perspective
    assert {"author": alice_id, "through_seq": 1} in perspective["included"], perspective
    assert [x["target"] for x in perspective["disputes"]] == [p["id"]] and p["id"] in perspective["excluded"], perspective


def test_from_home_and_a_rotated_token(founder: Home, node: Node, tmp_path: Any) -> None:
    client = agora.Client.from_home(founder.path)
    assert client.base_url == f"http://{node.control}"
    assert client.identity()["agent"] == founder.id
    assert agora.Client.from_home(founder.path, agent="self").identity()["agent"] == founder.id
    run(founder.path, "token", "rotate")

    def refused() -> bool | None:
        try:
            client.identity()
        except agora.Unauthorized:
            return True
        return None

    wait_for("the old token to be refused", refused, timeout=10)
    assert agora.Client.from_home(founder.path).identity()["agent"] == founder.id
    with pytest.raises(agora.NodeUnreachable) as e:
        agora.Client.from_home(tmp_path / "no-such-home")
    assert e.value.status is None and "node.json" in e.value.message


def test_no_node_is_unreachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(agora.NodeUnreachable) as e:
        agora.Client(f"127.0.0.1:{port}", "token", timeout=5).view_hash()
    assert isinstance(e.value, ConnectionError) and e.value.status is None and e.value.code == "unreachable"


def holds(client: agora.Client, entry: str) -> bool | None:
    """True once the client's node holds `entry`, else None (to wait for)."""
    try:
        client.status(entry)
    except agora.NotFound:
        return None
    return True


def test_two_nodes_reach_the_same_view(
    founder: Home, node: Node, make_home: Callable[[], Home], start_node: Callable[..., Node]
) -> None:
    member = make_home()
    node.client().admit(member.id, "Member")
    other = start_node(member, founder.id, [node.addr])
    a, b = node.client(), other.client()
    p = a.propose("Replicate through the swarm")
    wait_for("the member's node to receive the proposal", lambda: holds(b, p["id"]))
    c = b.contradict(p["id"], "Only within the workspace")
    wait_for("the founder's node to receive the contradiction", lambda: holds(a, c["id"]))
    wait_for("both nodes to hold the same view", lambda: a.view_hash()["view_hash"] == b.view_hash()["view_hash"] or None)
    assert a.status(p["id"])["status"] == "contested" and b.status(c["id"])["author"] == member.id


def test_admins_remove_by_quorum_across_nodes_and_a_new_set_withdraws_it(
    founder: Home, node: Node, make_home: Callable[[], Home], start_node: Callable[..., Node]
) -> None:
    member = make_home()
    founder.new_agent("alice")
    carol_id = founder.new_agent("carol")
    a = node.client()
    for agent in (member.id, "alice", "carol"):
        a.admit(agent)
    named = a.admins([member.id, "alice"], 2, note="two of two")
    assert (sorted(named["admins"]), named["threshold"], named["withdrawn"]) == (sorted([member.id, a.with_agent("alice").identity()["agent"]]), 2, [])
    carol = a.with_agent("carol")
    kept = carol.propose("Carol's first, kept")
    carol.propose("Carol's second, after the boundary")
    other = start_node(member, founder.id, [node.addr])
    b = other.client()
    wait_for("the admin's node to receive carol's entries", lambda: holds(b, kept["id"]))
    first = b.remove(carol_id, "key leaked", at=kept["id"])
    assert first["vote"] == {"voters": 1, "threshold": 2, "outcome": "short"}, first
    assert first["last_seq_admitted"] == 1, first
    wait_for("the founder's node to receive the first vote", lambda: holds(a, first["id"]))
    second = a.with_agent("alice").remove(carol_id, "seen it too", at=kept["id"][:16])
    assert second["vote"] == {"voters": 2, "threshold": 2, "outcome": "applied"}, second

    def cut_at(client: agora.Client) -> int | None:
        return next((c["last_seq_admitted"] for c in client.roster().get("cut_off", []) if c["agent"] == carol_id), None)

    for client in (a, b):
        assert wait_for("both nodes to apply the quorum's removal", lambda: cut_at(client)) == 1
    wait_for("both nodes to hold the same view", lambda: a.view_hash()["view_hash"] == b.view_hash()["view_hash"] or None)

    # The founder names no admins: the quorum's removal is withdrawn, on
    # both nodes, and its answer says so.
    none = a.admins([], 0, note="no admins")
    assert (none["admins"], none["threshold"], len(none["withdrawn"])) == ([], 0, 1), none
    assert carol_id in none["withdrawn"][0], none
    for client in (a, b):
        wait_for("the removal to be withdrawn on both nodes", lambda: cut_at(client) is None or None)
    assert carol_id in {m["agent"] for m in b.roster()["members"]}


def test_error_answers_without_the_shape() -> None:
    from agora.errors import error_from_answer

    e = error_from_answer(502, b"<html>bad gateway</html>")
    assert isinstance(e, agora.ServerError) and (e.status, e.rule) == (502, "unknown") and "bad gateway" in e.message
    e = error_from_answer(404, b'{"code": "not_found", "rule": "unknown_agent", "message": "no", "entry": null}')
    assert isinstance(e, agora.UnknownAgent) and e.entry is None
    e = error_from_answer(422, b'{"code": "refused", "rule": "wrong_state", "message": "m", "entry": "ab"}')
    assert isinstance(e, agora.Refused) and e.entry == "ab"
