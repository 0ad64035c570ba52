// The live graph page: reads the node's JSON API (/v1/ops/*) with the
// control token, draws the reasoning graph (one lane per agent, events in
// time order, colour and shape by status and kind), and redraws within a
// second of an event arriving (the node's /v1/events stream).
//
// The token comes in the URL fragment (#token=...), which browsers never
// send to a server; it is moved to session storage and removed from the
// address bar at once, so it appears in no log and no history entry.
"use strict";

const STATUS_COLOURS = {
  active: ["#e6efe2", "#4a7a4a"], contested: ["#fbe3c8", "#c46a1b"], superseded: ["#eeeeee", "#999999"],
  resolved: ["#dde8f7", "#3a64a4"], parked: ["#f3eed8", "#a89a5a"], retracted: ["#f8e3df", "#a44a3a"],
  duplicate: ["#f0e6f5", "#7a4a94"], invalid: ["#ffcccc", "#cc0000"], pending: ["#ffffff", "#bbbbbb"],
};
const EDGE_COLOURS = { contradicts: "#c46a1b", supports: "#4a7a4a", refines: "#3a64a4", resolves: "#3a64a4", synthesizes: "#7a4a94" };
const LANE = 230, ROW = 64, TOP = 50, LEFT = 40, R = 18;

const state = { token: "", graph: null, disputes: null, perspective: "", asOf: null, selected: null, matches: new Set(), times: [] };

function takeToken() {
  const m = location.hash.match(/token=([0-9a-f]+)/);
  if (m) {
    sessionStorage.setItem("agora-token", m[1]);
    history.replaceState(null, "", location.pathname);
  }
  state.token = sessionStorage.getItem("agora-token") || "";
}

async function op(name, body) {
  const r = await fetch("/v1/ops/" + name, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer " + state.token },
    body: JSON.stringify(body || {}),
  });
  const v = await r.json();
  if (!r.ok) throw new Error(name + ": " + v.message);
  return v;
}

function showError(e) { document.getElementById("error").textContent = e ? String(e.message || e) : ""; }

function el(tag, attrs, parent) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function short(id) { return id.slice(0, 8); }

// Shapes by kind: what a node is; colour says its status.
function shape(kind, g, fill, stroke) {
  const s = { fill, stroke, class: "shape" };
  switch (kind) {
    case "contradiction": return el("polygon", { ...s, points: `0,${-R} ${R},${R * 0.8} ${-R},${R * 0.8}` }, g);
    case "refinement": case "reframe": return el("rect", { ...s, x: -R, y: -R * 0.8, width: 2 * R, height: 1.6 * R, rx: 4 }, g);
    case "synthesis": return el("polygon", { ...s, points: `0,${-R} ${R},0 0,${R} ${-R},0` }, g);
    case "question": return el("polygon", { ...s, points: `${-R / 2},${-R} ${R / 2},${-R} ${R},0 ${R / 2},${R} ${-R / 2},${R} ${-R},0` }, g);
    case "support": return el("circle", { ...s, r: R * 0.7 }, g);
    default: return el("circle", { ...s, r: R }, g);
  }
}

async function load() {
  try {
    let graph = await op("graph", { format: "json" });
    if (state.asOf !== null) {
      // The graph as it was: its nodes and statuses then, its edges among them.
      const past = await op("history", { as_of: String(state.asOf) });
      const then = new Map(past.result.map((n) => [n.id, n.status]));
      graph = { nodes: graph.nodes.filter((n) => then.has(n.id)).map((n) => ({ ...n, status: then.get(n.id) })), edges: graph.edges };
    }
    if (state.perspective) {
      const p = await op("perspective", { agent: state.perspective });
      const seen = new Map((p.nodes || []).map((n) => [n.id, n]));
      graph = { nodes: graph.nodes.filter((n) => seen.has(n.id)).map((n) => ({ ...n, status: seen.get(n.id).status, disputed: seen.get(n.id).disputed })), edges: graph.edges };
    }
    state.graph = graph;
    state.disputes = await op("disputes", {});
    if (state.asOf === null) state.times = graph.nodes.map((n) => n.timestamp_ms).sort((a, b) => a - b);
    agents(graph);
    draw();
    showError(null);
  } catch (e) { showError(e); }
}

function agents(graph) {
  const select = document.getElementById("perspective");
  const have = new Set([...select.options].map((o) => o.value));
  for (const a of [...new Set(graph.nodes.map((n) => n.author))].sort()) {
    if (!have.has(a)) select.add(new Option("agent " + short(a), a));
  }
  const slider = document.getElementById("asof");
  slider.max = String(state.times.length);
  if (state.asOf === null) slider.value = slider.max;
}

function disputedIds() {
  const ids = new Map();
  for (const d of (state.disputes && state.disputes.disputed) || []) ids.set(d.target, d);
  return ids;
}

function draw() {
  const svg = document.getElementById("graph");
  svg.replaceChildren();
  const { nodes, edges } = state.graph;
  const authors = [...new Set(nodes.map((n) => n.author))].sort();
  const order = [...nodes].sort((a, b) => a.timestamp_ms - b.timestamp_ms || a.author.localeCompare(b.author) || a.seq - b.seq);
  const at = new Map();
  order.forEach((n, i) => at.set(n.id, { x: LEFT + R + LANE * authors.indexOf(n.author), y: TOP + ROW * i, n }));
  svg.setAttribute("width", LEFT * 2 + LANE * Math.max(authors.length, 1));
  svg.setAttribute("height", TOP + ROW * (order.length + 1));
  const defs = el("defs", {}, svg);
  const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, defs);
  el("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#888" }, marker);
  authors.forEach((a, i) => {
    const x = LEFT + R + LANE * i;
    el("line", { class: "lane", x1: x, y1: TOP - 20, x2: x, y2: TOP + ROW * order.length }, svg);
    el("text", { class: "lane-label", x: x - R, y: 20 }, svg).textContent = "agent " + short(a);
  });
  for (const e of edges) {
    const from = at.get(e.from), to = at.get(e.to);
    if (!from || !to) continue;
    const mx = (from.x + to.x) / 2 + (from.x === to.x ? 60 : 0);
    const path = el("path", { class: "edge", d: `M ${from.x} ${from.y} Q ${mx} ${(from.y + to.y) / 2} ${to.x} ${to.y + (to.y < from.y ? R : -R)}`, stroke: EDGE_COLOURS[e.relation] || "#888", "marker-end": "url(#arrow)" }, svg);
    el("title", {}, path).textContent = e.relation;
  }
  const disputed = disputedIds();
  for (const { x, y, n } of at.values()) {
    const [fill, stroke] = STATUS_COLOURS[n.status] || STATUS_COLOURS.pending;
    const cls = ["node", n.id === state.selected ? "selected" : "", state.matches.has(n.id) ? "match" : ""].join(" ").trim();
    const g = el("g", { class: cls, transform: `translate(${x},${y})`, "data-id": n.id, "data-status": n.status, "data-kind": n.kind }, svg);
    shape(n.kind, g, fill, stroke);
    if (disputed.has(n.id) || n.disputed) el("circle", { class: "disputed", r: R + 5 }, g);
    const label = el("text", { x: R + 6, y: -2 }, g);
    label.textContent = `${n.kind} ${short(n.id)} [${n.status}]`;
    const text = el("text", { x: R + 6, y: 12, fill: "#555" }, g);
    text.textContent = n.text.length > 30 ? n.text.slice(0, 30) + "…" : n.text;
    el("title", {}, g).textContent = n.text;
    g.addEventListener("click", () => select(n.id));
  }
  legend();
}

function legend() {
  const box = document.getElementById("legend");
  box.replaceChildren();
  for (const [status, [fill, stroke]] of Object.entries(STATUS_COLOURS)) {
    const s = document.createElement("span");
    const i = document.createElement("i");
    i.style.background = fill; i.style.borderColor = stroke;
    s.append(i, status);
    box.append(s);
  }
}

async function select(id) {
  state.selected = id;
  draw();
  const detail = document.getElementById("detail");
  try {
    const t = await op("trace", { target: id });
    const node = state.graph.nodes.find((n) => n.id === id);
    const h = document.createElement("h2");
    h.textContent = `${node ? node.kind : "node"} ${short(id)}: ${t.status}`;
    const p = document.createElement("p");
    p.textContent = node ? node.text : "";
    const list = document.createElement("ol");
    list.id = "trace";
    for (const ev of t.events) {
      const li = document.createElement("li");
      li.dataset.id = ev.id;
      li.innerHTML = `<code></code> <b></b> by agent <code></code> #<span></span> <span class="verified" title="signature, payload hash and chain link checked">✓ verified</span><br><span></span>`;
      li.children[0].textContent = short(ev.id);
      li.children[1].textContent = ev.kind || "?";
      li.children[2].textContent = short(ev.author);
      li.children[3].textContent = ev.seq;
      li.children[6].textContent = ev.text || "";
      list.append(li);
    }
    const disputes = document.createElement("div");
    const d = disputedIds().get(id);
    for (const x of (d && d.disputes) || []) {
      const div = document.createElement("div");
      div.className = "dispute";
      div.textContent = `disputed by agent ${short(x.by)}: ${x.reason}` + (x.counter_claim ? ` (counter-claim: ${x.counter_claim})` : "");
      disputes.append(div);
    }
    detail.replaceChildren(h, p, list, disputes);
  } catch (e) { showError(e); }
}

async function search(ev) {
  ev.preventDefault();
  const topic = document.getElementById("search").value.trim();
  const box = document.getElementById("search-results");
  box.replaceChildren();
  state.matches = new Set();
  if (topic) {
    try {
      const o = await op("orient", { topic, include_superseded: true });
      for (const n of o.nodes) {
        state.matches.add(n.id);
        const a = document.createElement("a");
        a.href = "#"; a.textContent = `${short(n.id)} [${n.status}] ${n.text}`;
        a.onclick = (e) => { e.preventDefault(); select(n.id); };
        const p = document.createElement("p"); p.append(a); box.append(p);
      }
      if (!o.nodes.length) box.textContent = "no node matches";
    } catch (e) { showError(e); }
  }
  draw();
}

// Live: the node's event stream, read with the token in a header (an
// EventSource cannot send one). Each change reloads the view.
async function live() {
  const badge = document.getElementById("live");
  for (;;) {
    try {
      const r = await fetch("/v1/events", { headers: { authorization: "Bearer " + state.token } });
      if (!r.ok) throw new Error("events: " + r.status);
      badge.textContent = "live";
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const message = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          if (message.split("\n").some((l) => l.startsWith("event: change")) && state.asOf === null) load();
        }
      }
    } catch (e) { badge.textContent = "reconnecting…"; }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function main() {
  takeToken();
  if (!state.token) { showError("no token: open this page with `agora open`, or add #token=<token from node.json>"); return; }
  document.getElementById("perspective").onchange = (e) => { state.perspective = e.target.value; load(); };
  document.getElementById("search-form").onsubmit = search;
  document.getElementById("asof").oninput = (e) => {
    const i = Number(e.target.value);
    const label = document.getElementById("asof-label");
    if (i >= state.times.length) { state.asOf = null; label.textContent = "now"; }
    else { state.asOf = state.times[Math.max(i - 1, 0)] + (i === 0 ? -1 : 0); label.textContent = new Date(state.asOf).toISOString().replace("T", " ").slice(0, 19); }
    load();
  };
  op("identity", {}).then((v) => { document.getElementById("node").textContent = "this agent " + short(v.agent || v.id || ""); }).catch(() => {});
  load();
  live();
}

main();
