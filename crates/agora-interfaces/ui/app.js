// The live graph page: reads the node's JSON API (v1/ops/*, relative to
// the page's own path) with the page's session, draws the reasoning graph (one lane per agent, events in
// time order, colour and shape by status and kind), the merge layer on it
// (forked chains as sub-lanes with their fork point, which branch the
// author kept, every agent's accept frontier on every other agent's lane,
// disputed events ringed, the ranges a key revocation leaves out struck
// through after their boundary), and redraws within a second of an event arriving
// (the node's /v1/events stream).
//
// It stays interactive at 10,000 nodes and more: the layout (one sort, then
// linear passes) is computed once per data load; only what is in the
// scrolled viewport is put into the SVG (nodes of the visible rows, the
// edges that touch them, at most EDGES_MAX); zoomed out, runs of settled
// nodes of one lane collapse into one glyph; statuses and agents can be
// filtered out; and a stream of events causes at most one reload in flight
// and one queued, started at most every RELOAD_MS.
//
// The page never holds the node's control token. `agora open` logs the
// browser in with a one-time code; the node answers with the page's
// session, an HttpOnly cookie for this page's path only, which the
// browser attaches to the page's requests (all relative to the page's
// path). The session opens the page's reads, its event stream and its
// WebSocket, nothing else.
"use strict";

const STATUS_COLOURS = {
  active: ["#e6efe2", "#4a7a4a"], contested: ["#fbe3c8", "#c46a1b"], superseded: ["#eeeeee", "#999999"],
  resolved: ["#dde8f7", "#3a64a4"], parked: ["#f3eed8", "#a89a5a"], retracted: ["#f8e3df", "#a44a3a"],
  duplicate: ["#f0e6f5", "#7a4a94"], invalid: ["#ffcccc", "#cc0000"], pending: ["#ffffff", "#bbbbbb"],
};
// What collapses into a cluster glyph when zoomed out: nothing left to decide.
const SETTLED = new Set(["superseded", "resolved", "retracted", "duplicate"]);
const EDGE_COLOURS = { contradicts: "#c46a1b", supports: "#4a7a4a", refines: "#3a64a4", resolves: "#3a64a4", synthesizes: "#7a4a94" };
const LANE = 230, ROW = 72, TOP = 56, LEFT = 60, R = 18;
// Row heights (px) below which labels are left out, and runs of settled nodes collapse.
const LABELS_BELOW = 30, CLUSTER_BELOW = 12, RUN_MIN = 3;
// At most this many edges are drawn at once (the ones touching the viewport, nearest first).
const EDGES_MAX = 1500;
// Rows drawn above and below the viewport.
const OVERSCAN = 6;
// A change on the event stream reloads at most this often.
const RELOAD_MS = 120;

const state = {
  graph: null, disputes: null, consensus: null, perspective: "", asOf: null, selected: null, matches: new Set(), times: [],
  agent: "", hidden: new Set(), zoom: 0, layout: null,
};
// Figures for tests and the curious: times in ms (performance.now()).
const stats = { firstDrawAt: null, loads: 0, loadedAt: 0, fetchMs: 0, layoutMs: 0, drawMs: 0, loadMs: 0, nodes: 0, shown: 0, drawnNodes: 0, drawnEdges: 0, clusters: 0, view: {}, longestTaskMs: 0 };
window.agoraStats = stats;

const SESSION_ENDED = "the page's session has ended (or the node restarted): run `agora open` again";

async function op(name, body) {
  const r = await fetch("v1/ops/" + name, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body || {}),
  });
  if (r.status === 401) throw new Error(SESSION_ENDED);
  const v = await r.json();
  if (!r.ok) throw new Error(name + ": " + v.message);
  return v;
}

function showError(e) { document.getElementById("error").textContent = e ? String(e.message || e) : ""; }

function el(tag, attrs, parent) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

function short(id) { return (id || "").slice(0, 8); }

// What leaves a revoked range out, in words: a revocation (a rotation by the
// next key), a recovery the roster binds (before its recover entry is held,
// `rotation` is the founder's binding entry), or a recover entry the roster
// does not bind.
function leftOutBy(r) {
  if (r.event === "recover") return `left out by the key recovery ${short(r.rotation)} after ${short(r.boundary)}`;
  if (r.event === "unbound_recover") return `after the recover entry ${short(r.rotation)} (after ${short(r.boundary)}), which the roster does not bind`;
  return `left out by the key rotation ${short(r.rotation)} after ${short(r.boundary)}`;
}

// Shapes by kind: what a node is; colour says its status.
function shape(kind, g, fill, stroke, r) {
  const s = { fill, stroke, class: "shape" };
  switch (kind) {
    case "contradiction": return el("polygon", { ...s, points: `0,${-r} ${r},${r * 0.8} ${-r},${r * 0.8}` }, g);
    case "refinement": case "reframe": return el("rect", { ...s, x: -r, y: -r * 0.8, width: 2 * r, height: 1.6 * r, rx: Math.min(4, r / 3) }, g);
    case "synthesis": return el("polygon", { ...s, points: `0,${-r} ${r},0 0,${r} ${-r},0` }, g);
    case "question": return el("polygon", { ...s, points: `${-r / 2},${-r} ${r / 2},${-r} ${r},0 ${r / 2},${r} ${-r / 2},${r} ${-r},0` }, g);
    case "support": return el("circle", { ...s, r: r * 0.7 }, g);
    default: return el("circle", { ...s, r }, g);
  }
}

// ---------------------------------------------------------------- loading

// One load in flight at a time; requests made meanwhile become one more.
let inFlight = null, again = false, reloadTimer = null;
function reload() {
  if (inFlight) { again = true; return inFlight; }
  inFlight = (async () => {
    try { do { again = false; await load(); } while (again); } finally { inFlight = null; }
  })();
  return inFlight;
}
// The event stream's changes: at most one reload started per RELOAD_MS.
function scheduleReload() {
  if (reloadTimer) return;
  reloadTimer = setTimeout(() => { reloadTimer = null; reload(); }, RELOAD_MS);
}

async function load() {
  const t0 = performance.now();
  const asOf = state.asOf, perspective = state.perspective;
  try {
    const [full, past, p, disputes, consensus, roster] = await Promise.all([
      op("graph", { format: "json" }),
      asOf !== null ? op("history", { as_of: String(asOf) }) : null,
      // The merge layer as it was too: who had accepted and disputed what then.
      perspective ? op("perspective", asOf !== null ? { agent: perspective, as_of: String(asOf) } : { agent: perspective }) : null,
      op("disputes", asOf !== null ? { as_of: String(asOf) } : {}),
      // No chain yet: no quorum to ask for.
      op("consensus", asOf !== null ? { quorum: 1, as_of: String(asOf) } : { quorum: 1 }).catch(() => null),
      // The members' display names (their admissions' notes), for the lanes.
      op("roster", {}).catch(() => null),
    ]);
    state.names = new Map(((roster && roster.members) || []).filter((m) => m.display_name).map((m) => [m.agent, m.display_name]));
    const t1 = performance.now();
    let graph = full;
    if (past) {
      // The graph as it was: its nodes and statuses then, its edges among them.
      const then = new Map(past.result.map((n) => [n.id, n.status]));
      graph = { nodes: graph.nodes.filter((n) => then.has(n.id)).map((n) => ({ ...n, status: then.get(n.id) })), edges: graph.edges };
    }
    if (p) {
      const seen = new Map((p.nodes || []).map((n) => [n.id, n]));
      graph = { nodes: graph.nodes.filter((n) => seen.has(n.id)).map((n) => ({ ...n, status: seen.get(n.id).status, disputed: seen.get(n.id).disputed })), edges: graph.edges };
    }
    state.graph = graph;
    state.disputes = disputes;
    state.consensus = consensus;
    if (asOf === null) state.times = full.nodes.map((n) => n.timestamp_ms).sort((a, b) => a - b);
    agents(full);
    layout();
    draw();
    legend();
    mergeInfo();
    stats.loads += 1;
    stats.fetchMs = t1 - t0;
    stats.loadMs = performance.now() - t0;
    stats.loadedAt = performance.now();
    stats.view = { perspective, asOf, nodes: graph.nodes.length };
    showError(null);
  } catch (e) { showError(e); }
}

function agents(graph) {
  const all = new Set(graph.nodes.map((n) => n.author));
  for (const a of (state.consensus && state.consensus.agents) || []) all.add(a);
  for (const id of ["perspective", "agent-filter"]) {
    const select = document.getElementById(id);
    const have = new Set([...select.options].map((o) => o.value));
    for (const a of [...all].sort()) if (!have.has(a)) select.add(new Option(agentLabel(a), a));
  }
  const slider = document.getElementById("asof");
  slider.max = String(state.times.length);
  if (state.asOf === null) slider.value = slider.max;
}

// An agent as the page names it: its display name and short id, or "agent" and the short id.
function agentLabel(a) {
  const name = state.names && state.names.get(a);
  return name ? name + " (" + short(a) + ")" : "agent " + short(a);
}

function disputedIds() {
  const ids = new Map();
  for (const d of (state.disputes && state.disputes.disputed) || []) ids.set(d.target, d);
  return ids;
}

// ---------------------------------------------------------------- layout

// The forks of the dispute map, each branch with the column it is drawn in.
// A branch's members: `members` when the API gives them, else its first
// entry and tips exactly, and other entries of the author at or after the
// fork seq by the seqs each branch reaches (exact when one branch goes on).
function forkPlan(nodesByAuthor) {
  const forks = ((state.disputes && state.disputes.forks) || []).map((f) => {
    const branches = [...f.branches].sort((a, b) => (b.kept - a.kept) || (a.first < b.first ? -1 : 1)).map((b) => ({
      ...b,
      members: b.members ? new Set(b.members) : null,
      exact: new Set([b.first, ...(b.tips || []).map((t) => t.id)]),
      reach: Math.max(f.seq, ...(b.tips || []).map((t) => t.seq)),
    }));
    return { author: f.author, seq: f.seq, shared: f.shared, resolved: branches.some((b) => b.kept), branches };
  });
  forks.sort((a, b) => (a.author < b.author ? -1 : a.author > b.author ? 1 : a.seq - b.seq));
  const branchOf = new Map(); // node id -> [fork, branch index]
  const cols = new Map(); // author -> number of columns
  for (const f of forks) {
    const mine = nodesByAuthor.get(f.author) || [];
    const parent = f.shared && branchOf.has(f.shared) ? branchOf.get(f.shared) : null;
    const parentCol = parent ? parent[0].branches[parent[1]].col : 0;
    let next = cols.get(f.author) || 1;
    f.branches.forEach((b, i) => { b.col = i === 0 ? parentCol : next++; });
    cols.set(f.author, next);
    for (const n of mine) {
      if (n.seq < f.seq) continue;
      let at = f.branches.findIndex((b) => (b.members ? b.members.has(n.id) : b.exact.has(n.id)));
      if (at < 0 && !f.branches.some((b) => b.members)) {
        const reach = f.branches.map((b, i) => [b, i]).filter(([b]) => b.held && b.reach >= n.seq);
        if (reach.length >= 1) at = reach[0][1];
        if (reach.length > 1) n.branchGuessed = true;
      }
      if (at >= 0) branchOf.set(n.id, [f, at]);
    }
  }
  return { forks, branchOf, cols };
}

function layout() {
  const t0 = performance.now();
  const g = state.graph;
  const byTime = (a, b) => a.timestamp_ms - b.timestamp_ms || (a.author < b.author ? -1 : a.author > b.author ? 1 : 0) || a.seq - b.seq;
  const nodesByAuthor = new Map();
  for (const n of g.nodes) {
    if (!nodesByAuthor.has(n.author)) nodesByAuthor.set(n.author, []);
    nodesByAuthor.get(n.author).push(n);
  }
  const plan = forkPlan(nodesByAuthor);
  const shown = g.nodes.filter((n) => !state.hidden.has(n.status) && (!state.agent || n.author === state.agent));
  const order = shown.sort(byTime);
  const authors = [...nodesByAuthor.keys()].filter((a) => !state.agent || a === state.agent).sort();
  // Columns: each author's lane, split into one sub-lane per fork branch.
  const laneStart = new Map();
  let width = 0;
  for (const a of authors) { laneStart.set(a, width); width += plan.cols.get(a) || 1; }
  const colX = (a, c) => LEFT + R + LANE * (laneStart.get(a) + c);
  const row = new Map();
  const xs = new Float64Array(order.length), cols = new Int32Array(order.length);
  const colRows = new Map(); // column x -> rows in order
  order.forEach((n, i) => {
    row.set(n.id, i);
    const b = plan.branchOf.get(n.id);
    const c = b ? b[0].branches[b[1]].col : 0;
    cols[i] = c;
    xs[i] = colX(n.author, c);
    if (!colRows.has(xs[i])) colRows.set(xs[i], []);
    colRows.get(xs[i]).push(i);
  });
  // Edges among shown nodes, as row pairs.
  const ef = [], et = [], er = [];
  for (const e of g.edges) {
    const f = row.get(e.from), t = row.get(e.to);
    if (f === undefined || t === undefined) continue;
    ef.push(f); et.push(t); er.push(e.relation);
  }
  // Fork geometry: where the branches part (rows), per fork.
  const forks = [];
  for (const f of plan.forks) {
    if (!laneStart.has(f.author)) continue;
    let first = Infinity;
    const branches = f.branches.map((b) => {
      let lo = Infinity, hi = -1;
      for (const n of nodesByAuthor.get(f.author) || []) {
        const at = plan.branchOf.get(n.id);
        if (!at || at[0] !== f || f.branches[at[1]] !== b || !row.has(n.id)) continue;
        const r = row.get(n.id);
        lo = Math.min(lo, r); hi = Math.max(hi, r);
      }
      first = Math.min(first, lo);
      return { ...b, x: colX(f.author, b.col), lo, hi };
    });
    const parentX = colX(f.author, f.branches[0].col);
    forks.push({ ...f, branches, x: parentX, row: first === Infinity ? -1 : first });
  }
  // Accept frontiers: agent X accepts author A's chain through seq s. The
  // tick goes under the last shown event of A's view chain at or below s
  // (merge events are not drawn), i.e. off the branches the view does not follow.
  const viewRows = new Map(); // author -> [[seq, row]] ascending by seq
  for (const [a, list] of nodesByAuthor) {
    const v = [];
    for (const n of list) {
      const at = plan.branchOf.get(n.id);
      if (at && (!at[0].resolved || !at[0].branches[at[1]].kept)) continue;
      if (row.has(n.id)) v.push([n.seq, row.get(n.id)]);
    }
    v.sort((x, y) => x[0] - y[0]);
    viewRows.set(a, v);
  }
  const ticks = [];
  for (const ch of (state.consensus && state.consensus.chains) || []) {
    if (!laneStart.has(ch.author)) continue;
    const v = viewRows.get(ch.author) || [];
    for (const fr of ch.frontiers || []) {
      if (fr.agent === ch.author || !fr.seq) continue;
      let lo = 0, hi = v.length - 1, at = -1;
      while (lo <= hi) { const mid = (lo + hi) >> 1; if (v[mid][0] <= fr.seq) { at = mid; lo = mid + 1; } else hi = mid - 1; }
      const r = at >= 0 ? v[at][1] : -1;
      const x = r >= 0 ? xs[r] : colX(ch.author, 0);
      ticks.push({ author: ch.author, agent: fr.agent, seq: fr.seq, row: r, x });
    }
  }
  ticks.sort((a, b) => a.row - b.row || a.x - b.x || (a.agent < b.agent ? -1 : 1));
  // Ranges a key revocation leaves out (they are in no view, so not among
  // the nodes): marked on the author's lane just below their boundary (the
  // last entry the owner vouches for), or below its last earlier event.
  const revoked = [];
  for (const r of (state.disputes && state.disputes.revoked) || []) {
    if (!laneStart.has(r.author)) continue;
    let at = row.has(r.boundary) ? row.get(r.boundary) : -1;
    if (at < 0) for (const n of nodesByAuthor.get(r.author) || []) if (n.seq < r.from_seq && row.has(n.id)) at = Math.max(at, row.get(n.id));
    revoked.push({ ...r, row: at, x: at >= 0 ? xs[at] : colX(r.author, 0) });
  }
  const lanes = authors.map((a) => ({ author: a, x: colX(a, 0), cols: plan.cols.get(a) || 1 }));
  state.layout = { order, row, xs, cols, colRows, ef, et, er, forks, ticks, revoked, lanes, width: LEFT * 2 + LANE * Math.max(width, 1), rowH: ROW, clusterOf: null, clusters: [] };
  scale();
  stats.nodes = g.nodes.length;
  stats.shown = order.length;
  stats.layoutMs = performance.now() - t0;
  const count = document.getElementById("count");
  count.textContent = order.length === g.nodes.length ? `${g.nodes.length} nodes` : `${order.length} of ${g.nodes.length} nodes shown`;
}

// What depends on the zoom (and on what is highlighted): the row height,
// the canvas size and the clusters of settled runs.
function scale() {
  const L = state.layout;
  if (!L) return;
  L.rowH = ROW * Math.pow(2, state.zoom);
  L.height = TOP + L.rowH * (L.order.length + 1) + 40;
  L.clusterOf = null;
  L.clusters = [];
  if (L.rowH < CLUSTER_BELOW) {
    const disputed = disputedIds();
    const settled = (i) => {
      const n = L.order[i];
      return SETTLED.has(n.status) && !n.disputed && !disputed.has(n.id) && !state.matches.has(n.id) && n.id !== state.selected;
    };
    L.clusterOf = new Int32Array(L.order.length).fill(-1);
    for (const [x, rows] of L.colRows) {
      let start = 0;
      for (let j = 0; j <= rows.length; j++) {
        if (j < rows.length && settled(rows[j])) continue;
        if (j - start >= RUN_MIN) {
          const c = { x, r0: rows[start], r1: rows[j - 1], count: j - start, statuses: {} };
          for (let q = start; q < j; q++) {
            const s = L.order[rows[q]].status;
            c.statuses[s] = (c.statuses[s] || 0) + 1;
            L.clusterOf[rows[q]] = L.clusters.length;
          }
          L.clusters.push(c);
        }
        start = j + 1;
      }
    }
  }
  const svg = document.getElementById("graph");
  svg.setAttribute("width", L.width);
  svg.setAttribute("height", L.height);
  stats.clusters = L.clusters.length;
}

// ---------------------------------------------------------------- drawing

const rowY = (L, r) => TOP + L.rowH * r + L.rowH / 2;

// Draw what is in the viewport (and OVERSCAN rows around it).
function draw() {
  const L = state.layout;
  if (!L) return;
  const t0 = performance.now();
  const box = document.getElementById("canvas");
  const svg = document.getElementById("graph");
  const top = box.scrollTop, h = box.clientHeight || 900;
  const rowH = L.rowH, full = rowH >= LABELS_BELOW;
  const a = Math.max(0, Math.floor((top - TOP) / rowH) - OVERSCAN);
  const b = Math.min(L.order.length - 1, Math.ceil((top + h - TOP) / rowH) + OVERSCAN);
  const yTop = Math.max(TOP - 20, top - 50), yBottom = Math.min(L.height, top + h + 50);
  const root = document.createDocumentFragment();
  const defs = el("defs", {}, root);
  const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, defs);
  el("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#888" }, marker);

  // Lanes: the author's main line, and each fork branch's sub-lane over the rows it spans.
  for (const lane of L.lanes) el("line", { class: "lane", x1: lane.x, y1: yTop, x2: lane.x, y2: yBottom }, root);
  for (const f of L.forks) {
    for (const br of f.branches) {
      if (br.x === f.x || br.hi < 0) continue;
      const y0 = Math.max(rowY(L, f.row) - rowH / 2, yTop), y1 = Math.min(rowY(L, br.hi), yBottom);
      if (y1 > y0) el("line", { class: "lane branch" + (br.kept ? " kept" : ""), x1: br.x, y1: y0, x2: br.x, y2: y1 }, root);
    }
  }

  // Edges: those with both ends in the drawn rows in full; those with one
  // end there as a short stub pointing at the other end (an edge to a node
  // thousands of rows away would cross the whole viewport); none passing
  // through. Both-ends-drawn first, at most EDGES_MAX in all.
  let drawnEdges = 0;
  const near = [], far = [];
  for (let k = 0; k < L.ef.length; k++) {
    const f = L.ef[k], t = L.et[k];
    const fin = f >= a && f <= b, tin = t >= a && t <= b;
    if (!fin && !tin) continue;
    if (L.clusterOf && L.clusterOf[f] >= 0 && L.clusterOf[f] === L.clusterOf[t]) continue;
    (fin && tin ? near : far).push(k);
  }
  for (const k of near) {
    if (drawnEdges >= EDGES_MAX) break;
    const f = L.ef[k], t = L.et[k];
    const fx = L.xs[f], fy = rowY(L, f), tx = L.xs[t], ty = rowY(L, t);
    const mx = (fx + tx) / 2 + (fx === tx ? Math.min(60, 10 + Math.abs(ty - fy) / 4) : 0);
    const end = full ? (ty < fy ? R : -R) : 0;
    const path = el("path", { class: "edge", d: `M ${fx} ${fy} Q ${mx} ${(fy + ty) / 2} ${tx} ${ty + end}`, stroke: EDGE_COLOURS[L.er[k]] || "#888" }, root);
    if (full) path.setAttribute("marker-end", "url(#arrow)");
    else path.setAttribute("stroke-width", "1");
    el("title", {}, path).textContent = L.er[k];
    drawnEdges++;
  }
  const stub = full ? 26 : Math.max(6, rowH * 2);
  for (const k of far) {
    if (drawnEdges >= EDGES_MAX) break;
    const f = L.ef[k], t = L.et[k];
    const inside = f >= a && f <= b ? f : t, other = inside === f ? t : f;
    const x = L.xs[inside], y = rowY(L, inside), dx = L.xs[other] - x, dy = rowY(L, other) - y;
    const len = Math.hypot(dx, dy) || 1;
    const r0 = full ? R : 0;
    const path = el("path", { class: "edge stub", d: `M ${x + (dx / len) * r0} ${y + (dy / len) * r0} l ${(dx / len) * stub} ${(dy / len) * stub}`, stroke: EDGE_COLOURS[L.er[k]] || "#888" }, root);
    if (full && inside === t) path.setAttribute("marker-start", "url(#arrow)");
    el("title", {}, path).textContent = `${L.er[k]} ${inside === f ? "→" : "←"} ${L.order[other].kind} ${short(L.order[other].id)}, ${Math.abs(other - inside)} rows ${other < inside ? "above" : "below"}`;
    drawnEdges++;
  }

  // Nodes of the visible rows; clustered ones as their cluster's glyph.
  const disputed = disputedIds();
  const drawnClusters = new Set();
  let drawnNodes = 0;
  for (let i = a; i <= b; i++) {
    const c = L.clusterOf ? L.clusterOf[i] : -1;
    if (c >= 0) {
      if (!drawnClusters.has(c)) { drawnClusters.add(c); cluster(L, L.clusters[c], c, root); }
      continue;
    }
    node(L, i, disputed, full, root);
    drawnNodes++;
  }

  // Fork points: where a chain has two signed continuations. The marker
  // sits in the gap above the first row of a branch (row texts keep to
  // their row's middle), and a branch drawn in another column leaves along it.
  for (const f of L.forks) {
    if (f.row < 0) continue;
    const y = rowY(L, f.row) - (full ? 28 : Math.max(rowH / 2, 6));
    const last = Math.max(...f.branches.map((br) => (br.lo === Infinity ? f.row : br.lo)));
    if (y > yBottom || rowY(L, last) < yTop) continue;
    const g = el("g", { class: "fork-marker", "data-author": f.author, "data-seq": f.seq, "data-resolved": f.resolved }, root);
    for (const br of f.branches) {
      if (br.lo === Infinity) continue;
      const by = rowY(L, br.lo) - (full ? R : 2);
      const d = br.x === f.x ? `M ${f.x} ${y} V ${by}` : `M ${f.x} ${y} H ${br.x - 10} Q ${br.x} ${y} ${br.x} ${y + 10} V ${by}`;
      el("path", { d, "stroke-dasharray": br.kept || !f.resolved ? "" : "5 4" }, g);
      if (!full) continue;
      const same = br.x === f.x;
      const label = el("text", { class: br.kept ? "kept-mark" : f.resolved ? "" : "open-mark", x: same ? f.x - 10 : br.x + 8, y: y + 11, "text-anchor": same ? "end" : "start", "data-branch": br.first, "data-kept": br.kept }, g);
      label.textContent = br.kept ? "kept ✓" : f.resolved ? "not kept" : "unresolved";
    }
    el("rect", { x: f.x - 5, y: y - 5, width: 10, height: 10, transform: `rotate(45 ${f.x} ${y})` }, g);
    if (full) {
      const text = el("text", { x: f.x + 26, y: y + 11 }, g);
      text.textContent = `fork at seq ${f.seq}` + (f.resolved ? " (resolved)" : " (unresolved: chain frozen)");
    }
    el("title", {}, g).textContent = `fork at seq ${f.seq}: agent ${short(f.author)} signed ${f.branches.length} continuations of its chain` +
      f.branches.map((br) => `\nbranch ${short(br.first)}${br.kept ? " (kept by the author's fork resolution)" : ""}: accepted by ${names(br.accepted_by)}, built on by ${names(br.built_on_by)}`).join("");
  }

  // Accept frontiers: a tick under the last event of the accepted prefix.
  const stacked = new Map();
  for (const t of L.ticks) {
    if (t.row >= 0 && (t.row < a || t.row > b)) continue;
    const y = t.row >= 0 ? rowY(L, t.row) + Math.min(rowH / 2, 32) - 6 : TOP - 8;
    if (y < yTop || y > yBottom) continue;
    const g = el("g", { class: "frontier", "data-agent": t.agent, "data-author": t.author, "data-seq": t.seq }, root);
    const at = `${t.row} ${t.x}`;
    if (full) {
      const label = `✓ ${short(t.agent).slice(0, 6)} ≤ ${t.seq}`;
      const w = 12 + label.length * 6.2;
      const x = t.x - R - 4 + (stacked.get(at) || 0);
      stacked.set(at, (stacked.get(at) || 0) + w + 4);
      el("rect", { x, y: y - 6, width: w, height: 12, rx: 6 }, g);
      el("text", { x: x + 6, y: y + 4 }, g).textContent = label;
    } else {
      const x = t.x - 10 - (stacked.get(at) || 0);
      stacked.set(at, (stacked.get(at) || 0) + 4);
      el("line", { x1: x, y1: y, x2: t.x + 10, y2: y }, g);
    }
    el("title", {}, g).textContent = `agent ${short(t.agent)} accepts agent ${short(t.author)} through seq ${t.seq}`;
  }

  // Revoked ranges: a struck, greyed band below the boundary, labelled.
  for (const r of L.revoked) {
    if (r.row >= 0 && (r.row < a - 1 || r.row > b)) continue;
    const y = r.row >= 0 ? rowY(L, r.row) + rowH / 2 : TOP - 8;
    if (y < yTop || y > yBottom) continue;
    const g = el("g", { class: "revoked", "data-author": r.author, "data-rotation": r.rotation, "data-event": r.event, "data-boundary": r.boundary, "data-count": r.count, "data-from": r.from_seq, "data-to": r.to_seq }, root);
    const seqs = r.from_seq === r.to_seq ? `seq ${r.from_seq}` : `seqs ${r.from_seq}–${r.to_seq}`;
    const label = `✗ ${r.event === "rotate" ? "revoked" : "recovered"}: ${r.count} ${r.count === 1 ? "entry" : "entries"}, ${seqs}`;
    const w = full ? 14 + label.length * 6.2 : 24;
    el("rect", { x: r.x - R, y: y - 7, width: w, height: 14, rx: 3 }, g);
    if (full) el("text", { x: r.x - R + 6, y: y + 4 }, g).textContent = label;
    el("title", {}, g).textContent = `${r.count} ${r.count === 1 ? "entry" : "entries"} of agent ${short(r.author)} (${seqs}) count in no view: ` +
      `${leftOutBy(r)}: every entry after the boundary on another branch is out` +
      (r.referenced_by || []).map((x) => `\n${x.kind} by agent ${short(x.by)} names ${short(x.target)}: never takes effect`).join("");
  }

  // Lane headings, kept at the top of the viewport.
  el("rect", { class: "lane-head", x: 0, y: top, width: L.width, height: 40 }, root);
  for (const lane of L.lanes) el("text", { class: "lane-label", x: lane.x - R, y: top + 18 }, root).textContent = agentLabel(lane.author);
  for (const f of L.forks) {
    for (const br of f.branches) {
      if (br.x === f.x) continue;
      const t = el("text", { class: "lane-label branch" + (br.kept ? " kept" : ""), x: br.x - R, y: top + 33 }, root);
      t.textContent = `↳ fork at seq ${f.seq}: ${short(br.first)}${br.kept ? " (kept)" : ""}`;
    }
  }

  svg.replaceChildren(root);
  stats.drawnNodes = drawnNodes;
  stats.drawnEdges = drawnEdges;
  stats.drawMs = performance.now() - t0;
  stats.drawnAt = performance.now();
  if (stats.firstDrawAt === null && L.order.length) stats.firstDrawAt = stats.drawnAt;
}

function names(list) { return list && list.length ? list.map(short).join(", ") : "nobody"; }

function node(L, i, disputed, full, root) {
  const n = L.order[i];
  const x = L.xs[i], y = rowY(L, i);
  const [fill, stroke] = STATUS_COLOURS[n.status] || STATUS_COLOURS.pending;
  const cls = ["node", full ? "" : "small", n.id === state.selected ? "selected" : "", state.matches.has(n.id) ? "match" : ""].join(" ").replace(/\s+/g, " ").trim();
  const g = el("g", { class: cls, transform: `translate(${x},${y})`, "data-id": n.id, "data-status": n.status, "data-kind": n.kind, "data-col": L.cols[i] }, root);
  const r = full ? R : Math.max(1.5, Math.min(R, L.rowH * 0.45));
  shape(n.kind, g, fill, stroke, r);
  if (disputed.has(n.id) || n.disputed) el("circle", { class: "disputed", r: r + (full ? 5 : 2) }, g);
  if (full) {
    const label = el("text", { x: R + 6, y: -2 }, g);
    label.textContent = `${n.kind} ${short(n.id)} [${n.status}]`;
    const text = el("text", { x: R + 6, y: 12, fill: "#555" }, g);
    text.textContent = n.text.length > 30 ? n.text.slice(0, 30) + "…" : n.text;
  }
  el("title", {}, g).textContent = `${n.kind} by agent ${short(n.author)}, seq ${n.seq} [${n.status}]${n.branchGuessed ? " (branch guessed)" : ""}\n${n.text}`;
}

function cluster(L, c, index, root) {
  const y0 = rowY(L, c.r0) - 3, y1 = rowY(L, c.r1) + 3;
  const g = el("g", { class: "cluster", "data-cluster": index, "data-count": c.count, "data-row": c.r0 }, root);
  el("rect", { x: c.x - 6, y: y0, width: 12, height: Math.max(y1 - y0, 4), rx: 5 }, g);
  if (y1 - y0 > 14) el("text", { x: c.x + 9, y: (y0 + y1) / 2 + 3 }, g).textContent = `${c.count} settled`;
  el("title", {}, g).textContent = `${c.count} settled nodes: ` + Object.entries(c.statuses).map(([s, k]) => `${k} ${s}`).join(", ") + " (click to zoom in)";
}

let drawPending = false;
function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => { drawPending = false; draw(); });
}

// Zoom to `level` (row height ROW * 2^level), keeping `row` (default: the
// viewport's middle) where it was on the screen.
function setZoom(level, row) {
  const L = state.layout;
  const box = document.getElementById("canvas");
  const t0 = performance.now();
  level = Math.max(-6, Math.min(0, level));
  let offset = box.clientHeight / 2;
  if (L && row === undefined) row = (box.scrollTop + offset - TOP) / L.rowH;
  else if (L) offset = rowY(L, row) - box.scrollTop;
  state.zoom = level;
  document.getElementById("zoom").value = String(level);
  scale();
  if (L) box.scrollTop = Math.max(0, TOP + row * state.layout.rowH - offset);
  draw();
  return performance.now() - t0;
}

// Scroll so that node `id` is in view (and drawn).
function reveal(id) {
  const L = state.layout;
  if (!L) return;
  if (!L.row.has(id)) { draw(); return; }
  const i = L.row.get(id);
  const box = document.getElementById("canvas");
  const y = rowY(L, i), x = L.xs[i];
  if (y < box.scrollTop + 40 || y > box.scrollTop + box.clientHeight - 20) box.scrollTop = Math.max(0, y - box.clientHeight / 2);
  if (x < box.scrollLeft || x > box.scrollLeft + box.clientWidth - 200) box.scrollLeft = Math.max(0, x - 100);
  draw();
}

// ---------------------------------------------------------------- panel

function legend() {
  const box = document.getElementById("legend");
  const counts = {};
  for (const n of (state.graph && state.graph.nodes) || []) counts[n.status] = (counts[n.status] || 0) + 1;
  box.replaceChildren();
  for (const [status, [fill, stroke]] of Object.entries(STATUS_COLOURS)) {
    const s = document.createElement("span");
    s.className = "status" + (state.hidden.has(status) ? " off" : "");
    s.dataset.status = status;
    s.title = state.hidden.has(status) ? "hidden: click to show" : "click to hide";
    const i = document.createElement("i");
    i.style.background = fill; i.style.borderColor = stroke;
    s.append(i, `${status} ${counts[status] || 0}`);
    s.onclick = () => {
      if (state.hidden.has(status)) state.hidden.delete(status); else state.hidden.add(status);
      refresh();
    };
    box.append(s);
  }
  const keys = document.createElement("div");
  keys.className = "keys";
  keys.textContent = "red dashed ring: disputed · ◆ fork point, sub-lanes per branch · ✓ X ≤ n: agent X accepts the lane's chain through seq n · ✗ revoked / recovered: entries a key revocation or recovery leaves out";
  box.append(keys);
}

// Who accepts what, and the forks, in words.
function mergeInfo() {
  const box = document.getElementById("merge-info");
  box.replaceChildren();
  const chains = ((state.consensus && state.consensus.chains) || []).filter((ch) => (ch.frontiers || []).some((f) => f.agent !== ch.author && f.seq));
  if (chains.length) {
    const h = document.createElement("h3");
    h.textContent = "Accepts";
    const ul = document.createElement("ul");
    ul.id = "accepts";
    let lines = 0;
    for (const ch of chains) {
      for (const f of ch.frontiers) {
        if (f.agent === ch.author || !f.seq || lines++ >= 200) continue;
        const li = document.createElement("li");
        li.dataset.agent = f.agent; li.dataset.author = ch.author; li.dataset.seq = f.seq;
        li.textContent = `agent ${short(f.agent)} accepts agent ${short(ch.author)} through seq ${f.seq}`;
        ul.append(li);
      }
    }
    box.append(h, ul);
  }
  const forks = (state.disputes && state.disputes.forks) || [];
  if (forks.length) {
    const h = document.createElement("h3");
    h.textContent = "Forks";
    const ul = document.createElement("ul");
    ul.id = "forks";
    for (const f of forks) {
      const li = document.createElement("li");
      const kept = f.branches.find((b) => b.kept);
      li.dataset.author = f.author; li.dataset.seq = f.seq;
      li.textContent = `agent ${short(f.author)}: fork at seq ${f.seq}; ` + (kept ? `resolved, keeps ${short(kept.first)}` : "unresolved, its chain is frozen before it");
      li.className = kept ? "kept" : "unresolved";
      const sub = document.createElement("ul");
      for (const b of f.branches) {
        const bl = document.createElement("li");
        const tip = (b.tips || []).map((t) => `seq ${t.seq}`).join(", ");
        bl.textContent = `branch ${short(b.first)}${b.kept ? " (kept)" : ""}${b.held ? "" : " (not held)"}${tip ? ", tips at " + tip : ""}; accepted by ${names(b.accepted_by)}; built on by ${names(b.built_on_by)}`;
        sub.append(bl);
      }
      li.append(sub);
      ul.append(li);
    }
    box.append(h, ul);
  }
  const revoked = (state.disputes && state.disputes.revoked) || [];
  if (revoked.length) {
    const h = document.createElement("h3");
    h.textContent = "Revoked";
    const ul = document.createElement("ul");
    ul.id = "revoked";
    for (const r of revoked) {
      const li = document.createElement("li");
      li.dataset.author = r.author; li.dataset.rotation = r.rotation;
      li.className = "revoked";
      li.dataset.event = r.event;
      li.textContent = `agent ${short(r.author)}: ${r.count} ${r.count === 1 ? "entry" : "entries"} (seq ${r.from_seq === r.to_seq ? r.from_seq : r.from_seq + "–" + r.to_seq}) ${leftOutBy(r)}`;
      const sub = document.createElement("ul");
      for (const x of r.referenced_by || []) {
        const rl = document.createElement("li");
        rl.dataset.entry = x.entry; rl.dataset.target = x.target;
        rl.textContent = `${x.kind} by agent ${short(x.by)} names revoked ${short(x.target)}: never takes effect`;
        sub.append(rl);
      }
      li.append(sub);
      ul.append(li);
    }
    box.append(h, ul);
  }
}

// The filters changed: lay out again (no fetch).
function refresh() {
  if (!state.graph) return;
  layout();
  draw();
  legend();
}

async function select(id) {
  state.selected = id;
  scale();
  reveal(id);
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
      if (ev.signed_by) {
        const key = document.createElement("span");
        key.className = "muted signed-by";
        key.textContent = ` (signed by key ${short(ev.signed_by)})`;
        li.children[4].after(key);
      }
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
    if (d && d.accepted_by && d.accepted_by.length) {
      const div = document.createElement("div");
      div.className = "muted";
      div.textContent = `accepted by ${names(d.accepted_by)}`;
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
  let first = null;
  if (topic) {
    try {
      const o = await op("orient", { topic, include_superseded: true });
      for (const n of o.nodes) {
        state.matches.add(n.id);
        if (first === null && state.layout && state.layout.row.has(n.id)) first = n.id;
        const a = document.createElement("a");
        a.href = "#"; a.textContent = `${short(n.id)} [${n.status}] ${n.text}`;
        a.onclick = (e) => { e.preventDefault(); select(n.id); };
        const p = document.createElement("p"); p.append(a); box.append(p);
      }
      if (!o.nodes.length) box.textContent = "no node matches";
    } catch (e) { showError(e); }
  }
  scale();
  if (first !== null) reveal(first); else draw();
  stats.searchedAt = performance.now();
}

// Live: the node's event stream (the session's cookie goes with it).
// Changes reload the view, at most one reload per RELOAD_MS and one at a
// time.
async function live() {
  const badge = document.getElementById("live");
  for (;;) {
    try {
      const r = await fetch("v1/events");
      if (r.status === 401) { badge.textContent = "session ended"; showError(SESSION_ENDED); return; }
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
          if (message.split("\n").some((l) => l.startsWith("event: change")) && state.asOf === null) scheduleReload();
        }
      }
    } catch (e) { badge.textContent = "reconnecting…"; }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function main() {
  // The longest main-thread task seen (Chromium reports tasks over 50 ms).
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) stats.longestTaskMs = Math.max(stats.longestTaskMs, e.duration);
    }).observe({ type: "longtask", buffered: true });
  } catch (e) { /* not supported here */ }
  window.agora = { draw, setZoom, reveal, reload, refresh, state };
  document.getElementById("perspective").onchange = (e) => { state.perspective = e.target.value; reload(); };
  document.getElementById("agent-filter").onchange = (e) => { state.agent = e.target.value; refresh(); };
  document.getElementById("search-form").onsubmit = search;
  document.getElementById("asof").oninput = (e) => {
    const i = Number(e.target.value);
    const label = document.getElementById("asof-label");
    if (i >= state.times.length) { state.asOf = null; label.textContent = "now"; }
    else { state.asOf = state.times[Math.max(i - 1, 0)] + (i === 0 ? -1 : 0); label.textContent = new Date(state.asOf).toISOString().replace("T", " ").slice(0, 19); }
    reload();
  };
  document.getElementById("zoom").oninput = (e) => setZoom(Number(e.target.value));
  const box = document.getElementById("canvas");
  box.addEventListener("scroll", scheduleDraw, { passive: true });
  window.addEventListener("resize", scheduleDraw);
  document.getElementById("graph").addEventListener("click", (e) => {
    const g = e.target.closest("g.node");
    if (g) { select(g.dataset.id); return; }
    const c = e.target.closest("g.cluster");
    if (c) setZoom(0, Number(c.dataset.row));
  });
  // An automerge-repo client in this page follows the merged view over the
  // page's WebSocket (v1/automerge/repo under the page's path, opened by
  // the session's cookie): window.agora.automergeRepo names the URLs.
  const socket = new URL("v1/automerge/repo", location.href);
  socket.protocol = "ws:";
  window.agora.session = fetch("v1/automerge/url")
    .then((r) => r.ok ? r.json() : null)
    .then((v) => { window.agora.automergeRepo = v ? { url: v.url, websocket: socket.href } : null; return window.agora.automergeRepo; })
    .catch(() => null);
  op("identity", {}).then((v) => { document.getElementById("node").textContent = "this agent " + short(v.agent || v.id || ""); }).catch(() => {});
  reload();
  live();
}

main();
