//! The simulated network: replicators and in-memory stores on virtual time,
//! joined by links that delay, throttle and lose packets, cut by partitions,
//! with nodes that crash and restart. It does what the libp2p node does and
//! nothing more: every message is encoded to its wire bytes and decoded on
//! arrival (with the workspace check and the `Busy`, `Wait` and
//! `WrongWorkspace` answers), ranges are read as the replicator's `Serve`
//! output says and cut by `respond`, gossip carries only what replicators
//! publish or accept, as the node's gossipsub does ([`crate::gossip`]: a
//! mesh, heartbeats with IHAVE / IWANT, a duplicate cache, scores; control
//! messages cost their bytes), and imports follow the store's rules and are reported with the
//! store's typed outcome. With a cost model ([`crate::cost`]) checks,
//! reads and writes take virtual time on the node's threads and cores, in
//! the node's bounded queues: `Busy` and lost writes happen as on a loaded
//! node. It decides nothing of its own: what to ask, serve, gossip or ban
//! is the replicator's.
//!
//! Packets wait in one queue ordered by (delivery time, send order); with the
//! default model (no latency, no loss) every packet is due at once and they
//! are delivered in the order they were sent (or newest first, to test
//! reordering). A sender's uplink takes each packet's bytes over its rate,
//! kept in ns (no floor per packet); a packet is delivered in the ms its
//! last byte arrives, and never before one sent earlier on the same
//! directed link (a connection is an ordered stream). Every random choice
//! (latency, loss) comes from the network's own seeded generator, so a run
//! is the same for the same seed.

use crate::cost::{Cost, Cpu, Lane};
use crate::gossip::{Control, Gossipsub, Outbound};
use crate::heap;
use crate::model::LinkModel;
use crate::views::{MergeBuilder, NodeView};
use agora_core::xorshift::Xorshift64;
use agora_core::{AgentId, AgentKey, EntryId, EntryRef, SignedEntry};
use agora_sync::Commit;
use agora_sync::harness::{self, Imported, Interner, MemStore};
use agora_sync::wire::gossip_message_id;
use agora_sync::{
    ANNOUNCE_INTERVAL_MS, BUSY_BACKOFF_MS, Config, Gossip, GossipVerdict, ImportOutcome, Message, Output, PeerId, RESPONSE_ENTRIES_MAX, Replicator,
    ServeRequest, VerifiedEntry, WireEntry, WireRequest, WireResponse, WorkspaceId,
};
use std::collections::{BTreeMap, BTreeSet};

/// How an honest move spread: see [`Net::spread`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spread {
    /// When its agent's node appended it, virtual ms.
    pub appended_ms: u64,
    /// Honest nodes holding it (its own included).
    pub honest_nodes: u32,
    /// When the last of them stored it.
    pub last_ms: u64,
}

/// How a node behaves towards its peers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Behaviour {
    /// Follows the protocol.
    #[default]
    Honest,
    /// Claims what it holds and never answers a range request.
    Withholder,
    /// A withholder that relays no gossip either (an eclipser: what its
    /// victim learns through it is nothing).
    Eclipser,
    /// Serves and relays entries without their payloads.
    Stripper,
    /// Serves and relays without their payloads the entries whose id falls
    /// in `per_mille` thousandths of the id space (a stripping pattern).
    StripSome {
        /// Thousandths of entries stripped.
        per_mille: u32,
    },
    /// Breaks the signature of the first entry of every response.
    Corrupter,
    /// Claims what it holds and answers range requests its own way: the
    /// replicator's answer changed by `answer`, sent `delay_ms` late (the
    /// delay holds that answer only, as a stream of its own would).
    Server {
        /// How late each answer is sent.
        delay_ms: u64,
        /// What it sends.
        answer: Answer,
    },
    /// Serves and relays without their payloads the entries of `author` (a
    /// stripper colluding with that author's equivocation).
    StripAuthor {
        /// Whose entries it strips.
        author: AgentId,
    },
    /// Relays the gossip of some authors and holds back that of those
    /// whose id falls in `per_mille` thousandths of the id space: `delay_ms`
    /// late, or, with 0, never (a selective relay).
    SelectiveRelay {
        /// Thousandths of authors held back.
        per_mille: u32,
        /// How late their gossip is relayed (0: dropped).
        delay_ms: u64,
    },
}

/// What a serving adversary ([`Behaviour::Server`]) makes of the answer
/// the replicator would send (its entries, in order, and `more`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// All of it (only late).
    Full,
    /// The first `per_mille` thousandths of its entries (one at least), with
    /// `more = false`: the rest of the range is claimed and never sent.
    Fraction {
        /// Thousandths kept.
        per_mille: u32,
    },
    /// Its first `k` entries, with `more = false`.
    FirstK {
        /// Entries kept.
        k: u32,
    },
    /// Its first entry, with `more = true` when any other followed: a drip.
    OneAtATime,
    /// Its entries in reverse order.
    Reversed,
    /// Its first half, each entry twice, with `more = true`.
    Duplicated,
    /// No entry, `more = false`, for heads it claimed.
    Empty,
    /// No answer at all.
    Silent,
}

impl Answer {
    /// The answer sent instead of (`entries`, `more`).
    pub fn apply(self, mut entries: Vec<WireEntry>, more: bool) -> (Vec<WireEntry>, bool) {
        let n = entries.len();
        match self {
            Answer::Full => (entries, more),
            Answer::Fraction { per_mille } => {
                entries.truncate((n * per_mille.min(1_000) as usize / 1_000).max(1));
                (entries, false)
            }
            Answer::FirstK { k } => {
                entries.truncate(k as usize);
                (entries, false)
            }
            Answer::OneAtATime => {
                entries.truncate(1);
                (entries, more || n > 1)
            }
            Answer::Reversed => {
                entries.reverse();
                (entries, more)
            }
            Answer::Duplicated => {
                entries.truncate(n.div_ceil(2));
                let doubled = entries.into_iter().flat_map(|e| [e.clone(), e]).take(RESPONSE_ENTRIES_MAX).collect();
                (doubled, true)
            }
            Answer::Empty | Answer::Silent => (Vec::new(), false),
        }
    }
}

/// Is `entry` (encoded) in the `per_mille` thousandths a stripping pattern
/// strips? By the hash of its bytes, so every node and run agrees.
fn stripped_by(entry: &[u8], per_mille: u32) -> bool {
    let h = agora_core::sha256(entry);
    u32::from(u16::from_be_bytes([h[0], h[1]])) % 1_000 < per_mille
}

/// The author of the entry a gossip message carries, if it carries one.
fn gossip_author(g: &Gossip) -> Option<AgentId> {
    match g {
        Gossip::Entry(WireEntry { entry, .. }) | Gossip::Announce(entry) => SignedEntry::decode(entry).ok().map(|e| e.header().author),
        Gossip::ForkProof(_) => None,
    }
}

/// Is `author` among the `per_mille` thousandths of authors a selective
/// relay holds back? By the hash of its id, so every run agrees.
fn held_back_author(author: &AgentId, per_mille: u32) -> bool {
    let h = agora_core::sha256(&author.0);
    u32::from(u16::from_be_bytes([h[0], h[1]])) % 1_000 < per_mille
}

/// One simulated node: its replicator, its store and how it behaves.
pub struct Node {
    /// The replication state machine, as the node runs it.
    pub rep: Replicator,
    /// What the node holds; kept across a crash.
    pub store: MemStore,
    /// Its workspace (a node of another answers `WrongWorkspace`).
    pub workspace: WorkspaceId,
    /// Honest or one of the adversaries' ways.
    pub behaviour: Behaviour,
    /// Down (crashed or not started): it sends and receives nothing.
    pub down: bool,
    /// Its gossipsub: mesh, duplicate cache, message cache, scores.
    pub gossip: Gossipsub,
    /// Its threads and cores, when the network has a cost model.
    cpu: Option<Cpu>,
    /// Incremented at each restart: work queued before it is dropped.
    epoch: u64,
    /// Payloads its replicator gave up on.
    pub unavailable: Vec<EntryRef>,
    /// Traffic it sent and received.
    pub traffic: Traffic,
    /// Its live merged view, when [`Net::live_views`] keeps one (`None`:
    /// not built yet, or to be built again from the store).
    pub view: Option<NodeView>,
}

/// Messages and bytes a node sent and received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Traffic {
    /// Packets sent.
    pub messages_sent: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Packets received (delivered while up and connected).
    pub messages_received: u64,
    /// Bytes received.
    pub bytes_received: u64,
}

/// Bytes in transit.
#[derive(Clone, Debug)]
pub enum Packet {
    /// A request (a frontier or a range request).
    Request(Vec<u8>),
    /// A response, with the id of the range request it answers (the
    /// transport correlates them, as libp2p's request-response does).
    Response(Option<u64>, Vec<u8>),
    /// A gossip message.
    Gossip(Vec<u8>),
    /// A gossipsub control message, with its bytes on the wire.
    Control(Control, usize),
}

impl Packet {
    fn len(&self) -> usize {
        match self {
            Packet::Request(b) | Packet::Response(_, b) | Packet::Gossip(b) => b.len(),
            Packet::Control(_, len) => *len,
        }
    }
}

/// Store work a node's thread finishes at a given time ([`crate::cost`]).
enum Work {
    /// A range read for a peer.
    Read(ServeRequest),
    /// An import of verified entries.
    Write { id: u64, entries: Vec<VerifiedEntry> },
    /// A response to check, then hand to the replicator.
    Check { peer: u64, req: u64, entries: Vec<WireEntry>, more: bool },
}

/// Gossip packets and bytes the network carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GossipTraffic {
    /// Gossip messages sent (published, relayed, or sent for an IWANT).
    pub messages: u64,
    /// Their bytes.
    pub message_bytes: u64,
    /// Control messages sent (IHAVE, IWANT, GRAFT, PRUNE).
    pub control: u64,
    /// Their bytes.
    pub control_bytes: u64,
    /// Messages dropped as duplicates (seen within the cache's time).
    pub duplicates: u64,
}

/// The network: nodes, links and packets in flight, on virtual time.
pub struct Net {
    /// The nodes, by index (a node's peer id is its index).
    pub nodes: Vec<Node>,
    /// Packets in flight, by (delivery time, send order).
    queue: BTreeMap<(u64, u64), (u64, u64, Packet)>,
    /// Packets an adversary holds back, by (when it sends them, order):
    /// (from, to, packet).
    held_back: BTreeMap<(u64, u64), (usize, u64, Packet)>,
    sent: u64,
    /// Open connections (lower index first).
    pub links: BTreeSet<(u64, u64)>,
    /// Every ban: (by, banned, reason).
    pub bans: Vec<(u64, u64, String)>,
    /// Every refusal of an author not admitted: (by, peer, author, what).
    pub refused: Vec<(u64, u64, AgentId, &'static str)>,
    /// Packets taken off the queue.
    pub delivered: usize,
    /// Packets lost on a link or sent to a node that was down or cut off.
    pub dropped: usize,
    /// Virtual time, ms.
    pub now: u64,
    /// Deliver the newest packet first among those due, whatever its link
    /// (responses arrive out of order): a test of the replicator's
    /// tolerance, which breaks the in-order delivery of a connection on
    /// purpose. Off by default.
    pub newest_first: bool,
    /// When set, every packet taken off the queue: (from, to, its send
    /// order, virtual ms). Off by default (a test's view of the wire).
    pub trace: Option<Vec<(u64, u64, u64, u64)>>,
    /// Range requests each node sent.
    pub requests_sent: Vec<usize>,
    /// Most requests each node had in flight at once.
    pub max_in_flight: Vec<usize>,
    /// `Busy` and `Wait` answers delivered (requests declined).
    pub busy: usize,
    /// `Wait` answers delivered.
    pub waits: usize,
    /// `WrongWorkspace` answers delivered.
    pub wrong_workspace: usize,
    /// Every range request: (from, to, start, limit).
    pub request_log: Vec<(usize, u64, agora_sync::RangeStart, u32)>,
    /// When each node first held a proof of each forked position: (author,
    /// seq) → node → virtual ms.
    pub forks_seen: BTreeMap<(AgentId, u64), BTreeMap<usize, u64>>,
    /// Nodes `0..honest_nodes` are honest (the rest run adversaries): what
    /// [`Net::spread`] follows. All of them unless the runner says otherwise.
    pub honest_nodes: usize,
    /// Every entry appended by an honest node's agent: when it was
    /// appended, how many honest nodes hold it, when the last of them got
    /// it (how far and how fast a move spreads).
    pub spread: BTreeMap<EntryId, Spread>,
    /// The link model every pair uses unless it has its own.
    pub model: LinkModel,
    /// Links with a model of their own (lower index first).
    pub link_models: BTreeMap<(u64, u64), LinkModel>,
    /// When each node's uplink is free again (bandwidth), virtual ns: a
    /// packet takes its bytes over the rate, with no floor per packet, and
    /// only delivery times are rounded to the ms.
    uplink_free_ns: Vec<u64>,
    /// When the last packet sent on each directed link (from, to) is
    /// delivered: a later one is never delivered before it (a connection is
    /// TCP's or QUIC's ordered stream).
    link_last_ms: BTreeMap<(u64, u64), u64>,
    /// Partition groups: two nodes in different groups cannot reach each other.
    group: Vec<u32>,
    config: Config,
    rng: Xorshift64,
    /// Keep each honest node's live merged view, fed every write it
    /// commits as the node's view thread feeds it ([`crate::views`]). Off
    /// by default; the runner turns it on.
    pub live_views: bool,
    /// What each node's live view is built with: the node's own
    /// [`agora_merge::LiveMerge`] unless a test says otherwise.
    pub merge_builder: MergeBuilder,
    /// The founder of the nodes' workspace, whose chain the roster is
    /// derived from.
    pub founder: AgentId,
    /// Agents on the roster from the start: the runner hands them to every
    /// replicator without an admission in the founder's chain, so the views
    /// count them as members too, as if the founder had admitted them before
    /// the run (unless its chain removes them). An author neither here nor
    /// admitted by the founder's chain counts in no view (`Roster::admits_entry`).
    pub members_from_start: std::collections::BTreeSet<AgentId>,
    /// Where the live views hold their entry ids: one arena for all nodes
    /// (each id held once, as the [`Interner`] holds each entry once).
    view_ids: std::sync::Arc<agora_core::id_arena::IdArena>,
    /// Live views that could not be built or fed: (node, what failed).
    pub view_failures: Vec<(usize, String)>,
    /// Flood every gossip message to every neighbour (deduplicated by id)
    /// instead of gossipsub's mesh: the model before the mesh, kept to
    /// compare. Off by default.
    pub flood: bool,
    /// The generator of the gossip model's choices (mesh peers, IHAVE
    /// targets), apart from the links' so that either leaves the other's
    /// draws alone.
    gossip_rng: Xorshift64,
    /// Bytes of the workspace topic's name (in every control message).
    topic_len: usize,
    /// Gossip traffic in all.
    pub gossip_traffic: GossipTraffic,
    /// What store work costs (`None`: nothing, done at once).
    cost: Option<Cost>,
    /// Store work in progress, by (ms it is done, order): (node, its epoch, work).
    work: BTreeMap<(u64, u64), (usize, u64, Work)>,
    /// Imports dropped because the node's write queue was full, reported
    /// `Lost` to its replicator (the node's lost-write path).
    pub lost_writes: usize,
    /// Range requests answered `Busy` because the node's read queue was full.
    pub busy_sent: usize,
}

/// Nanoseconds in a millisecond of virtual time.
const NS_PER_MS: u64 = 1_000_000;

/// The longest [`Net::run`] lets virtual time pass for short timers. A run
/// that is still busy then is left to the caller's `advance`.
pub const RUN_TIMERS_MS: u64 = 60_000;

/// When an uplink free from `free_ns` on (virtual ns) has sent `bytes` more
/// at `rate` bytes per second, starting no earlier than `now_ms`: the bytes'
/// time rounded up to the ns, so that a bulk transfer takes its bytes over
/// the rate whatever the packets' sizes.
fn uplink_done_ns(free_ns: u64, now_ms: u64, bytes: u64, rate: u64) -> u64 {
    let start = free_ns.max(now_ms.saturating_mul(NS_PER_MS));
    let busy = u128::from(bytes) * u128::from(NS_PER_MS * 1_000);
    let busy_ns = u64::try_from(busy.div_ceil(u128::from(rate))).unwrap_or(u64::MAX);
    start.saturating_add(busy_ns)
}

fn link(a: u64, b: u64) -> (u64, u64) {
    (a.min(b), a.max(b))
}

impl Net {
    /// `n` honest nodes of one workspace, up, unconnected, with the default
    /// link model (no latency, no loss), at virtual time 1,000 ms.
    pub fn new(n: usize, config: Config) -> Self {
        Self::with_seed(n, config, 1)
    }

    /// [`Net::new`] with the network's random choices drawn from `seed`.
    pub fn with_seed(n: usize, config: Config, seed: u64) -> Self {
        let founder = AgentId([0xf0; 32]);
        let workspace = WorkspaceId::new(&founder, "sim");
        // What nodes share is charged to none of them (`crate::heap`).
        let interner = Interner::with_scope(std::rc::Rc::new(|| Box::new(heap::charge(None))));
        let nodes = (0..n)
            .map(|_| Node {
                rep: Replicator::new(config.clone()),
                store: MemStore::sharing(&interner),
                workspace,
                behaviour: Behaviour::Honest,
                down: false,
                gossip: Gossipsub::new(1_000),
                cpu: None,
                epoch: 0,
                unavailable: Vec::new(),
                traffic: Traffic::default(),
                view: None,
            })
            .collect();
        Self {
            nodes,
            queue: BTreeMap::new(),
            held_back: BTreeMap::new(),
            sent: 0,
            links: BTreeSet::new(),
            bans: Vec::new(),
            refused: Vec::new(),
            delivered: 0,
            dropped: 0,
            now: 1_000,
            newest_first: false,
            trace: None,
            requests_sent: vec![0; n],
            max_in_flight: vec![0; n],
            busy: 0,
            waits: 0,
            wrong_workspace: 0,
            request_log: Vec::new(),
            forks_seen: BTreeMap::new(),
            spread: BTreeMap::new(),
            honest_nodes: n,
            model: LinkModel::default(),
            link_models: BTreeMap::new(),
            uplink_free_ns: vec![0; n],
            link_last_ms: BTreeMap::new(),
            group: vec![0; n],
            config,
            rng: Xorshift64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            live_views: false,
            merge_builder: crate::views::live_merge,
            founder,
            members_from_start: Default::default(),
            view_ids: Default::default(),
            view_failures: Vec::new(),
            flood: false,
            gossip_rng: Xorshift64(seed.wrapping_mul(0xd1b5_4a32_d192_ed03) | 1),
            topic_len: workspace.topic().len(),
            gossip_traffic: GossipTraffic::default(),
            cost: None,
            work: BTreeMap::new(),
            lost_writes: 0,
            busy_sent: 0,
        }
    }

    /// Give every node the cost model `cost` (`None`: no cost, every job
    /// done at once). Set before the run starts.
    pub fn set_cost(&mut self, cost: Option<Cost>) {
        for n in &mut self.nodes {
            n.cpu = cost.as_ref().map(|c| Cpu::new(c.cores));
        }
        self.cost = cost;
    }

    /// Node `i`'s gossipsub mesh.
    pub fn mesh(&self, i: usize) -> Vec<u64> {
        self.nodes[i].gossip.mesh().iter().copied().collect()
    }

    /// Does node `i` keep a live view?
    fn keeps_view(&self, i: usize) -> bool {
        self.live_views && i < self.honest_nodes && !self.nodes[i].down
    }

    /// Build node `i`'s live view from its store if it has none, as the
    /// node's view thread does at start and after a roster change, and hand
    /// its replicator the recoveries the roster it derived binds, as the
    /// node does whenever it derives the roster (`refresh_roster`): a
    /// recover entry no binding names is refused (`protocol-spec/keys.md`).
    fn ensure_view(&mut self, i: usize) {
        if !self.keeps_view(i) || self.nodes[i].view.is_some() {
            return;
        }
        let _charge = heap::charge(Some(i));
        match NodeView::build(&self.nodes[i].store, self.founder, &self.members_from_start, self.merge_builder, self.view_ids.clone()) {
            Ok(view) => {
                let now = self.now;
                self.nodes[i].rep.set_recoveries(view.roster.recovery_bindings(), now);
                self.nodes[i].view = Some(view);
            }
            Err(e) => self.view_failures.push((i, e)),
        }
    }

    /// Node `i`'s live view hash, current with every write it committed
    /// (built first if it has none); `None` if it keeps no view or it could
    /// not be built.
    pub fn live_view_hash(&mut self, i: usize) -> Option<[u8; 32]> {
        self.ensure_view(i);
        self.nodes[i].view.as_mut().map(|v| v.merge.view_hash())
    }

    /// Feed node `i`'s live view a write it committed (already in its
    /// store), as the node's store observer and view thread do: a write
    /// that may change the roster, or that the feed says calls for it,
    /// builds the view again from the store; any other is applied.
    fn view_commit(&mut self, i: usize, entries: Vec<(SignedEntry, Option<Vec<u8>>)>, payloads_changed: &[EntryId], forks: Vec<AgentId>) {
        let _charge = heap::charge(Some(i));
        if !self.keeps_view(i) {
            // Written while down: built from the store at its restart.
            self.nodes[i].view = None;
            return;
        }
        let founder = self.founder;
        let Node { view, store, .. } = &mut self.nodes[i];
        let applied = match view.as_mut() {
            Some(_) if agora_merge::roster_may_change(&founder, &entries, &forks) => Ok(false),
            Some(v) => v.commit(store, &founder, entries, payloads_changed, forks),
            None => Ok(false),
        };
        match applied {
            Ok(true) => {}
            Ok(false) => {
                *view = None;
                self.ensure_view(i);
            }
            Err(e) => {
                *view = None;
                self.view_failures.push((i, e));
            }
        }
    }

    /// Node `i`'s operator redacts the payloads of `ids` (`agora redact`):
    /// its store keeps their residues, its replicator stops seeking them
    /// (a commit that filled them, as the node's driver reports a redaction) and
    /// its live view takes the change as the node's view thread does. The
    /// ids whose payload it held, and so redacted.
    pub fn redact(&mut self, i: usize, ids: &[EntryId]) -> Vec<EntryId> {
        let _charge = heap::charge(Some(i));
        let done: Vec<EntryId> = ids.iter().copied().filter(|id| self.nodes[i].store.redact(id, agora_merge::residue)).collect();
        if !done.is_empty() {
            if !self.nodes[i].down {
                let commit = Commit { filled: &done, ..Commit::empty() };
                self.nodes[i].rep.committed(&commit, self.now);
            }
            self.view_commit(i, Vec::new(), &done, Vec::new());
        }
        done
    }

    /// Tell node `i`'s replicator what its store holds (after writing to it
    /// directly), as the node does at start-up and after a resync.
    pub fn sync_local(&mut self, i: usize) {
        let _charge = heap::charge(Some(i));
        let heads = self.nodes[i].store.heads();
        let now = self.now;
        self.nodes[i].rep.set_local_frontier(heads, now);
        let missing = self.nodes[i].store.missing_payloads();
        self.nodes[i].rep.payloads_missing(&missing, now);
    }

    /// Open a connection between `a` and `b`, as a dial does: both
    /// replicators learn the other, and send their frontiers. Nothing happens
    /// if either is down or they are in different partition groups.
    pub fn connect(&mut self, a: u64, b: u64) {
        if a == b || !self.reachable(a, b) || self.links.contains(&link(a, b)) {
            return;
        }
        // A node refuses the connections of a peer it banned, as the node's
        // connection gate does.
        let now = self.now;
        if self.nodes[a as usize].rep.banned_until(PeerId(b), now).is_some() || self.nodes[b as usize].rep.banned_until(PeerId(a), now).is_some() {
            return;
        }
        self.links.insert(link(a, b));
        for n in [a as usize, b as usize] {
            self.sync_local(n);
        }
        let now = self.now;
        for (x, y) in [(a, b), (b, a)] {
            let _charge = heap::charge(Some(x as usize));
            self.nodes[x as usize].rep.connected(PeerId(y), now);
        }
        // Both subscribe to the topic: each may graft the other.
        for (x, y) in [(a, b), (b, a)] {
            if self.flood {
                self.nodes[x as usize].gossip.add_peer(y);
                continue;
            }
            let _charge = heap::charge(Some(x as usize));
            let mut out = Vec::new();
            self.nodes[x as usize].gossip.connected(y, now, &mut out);
            self.gossip_sends(x as usize, out);
        }
    }

    /// Close the connection between `a` and `b`, as a lost connection does.
    pub fn disconnect(&mut self, a: u64, b: u64) {
        if self.links.remove(&link(a, b)) {
            self.nodes[a as usize].rep.disconnected(PeerId(b));
            self.nodes[b as usize].rep.disconnected(PeerId(a));
            let now = self.now;
            self.nodes[a as usize].gossip.disconnected(b, now);
            self.nodes[b as usize].gossip.disconnected(a, now);
        }
    }

    /// Is the connection between `a` and `b` open?
    pub fn connected(&self, a: u64, b: u64) -> bool {
        self.links.contains(&link(a, b))
    }

    /// Could `a` and `b` reach each other (both up, same partition group)?
    pub fn reachable(&self, a: u64, b: u64) -> bool {
        let (a, b) = (a as usize, b as usize);
        !self.nodes[a].down && !self.nodes[b].down && self.group[a] == self.group[b]
    }

    /// Split the network: `groups[i]` is node `i`'s side. Connections
    /// across the cut are lost (as when pings fail); nodes of one side stay
    /// connected.
    pub fn partition(&mut self, groups: &[u32]) {
        assert_eq!(groups.len(), self.nodes.len(), "one group per node");
        self.group = groups.to_vec();
        let cut: Vec<(u64, u64)> = self.links.iter().copied().filter(|&(a, b)| !self.reachable(a, b)).collect();
        for (a, b) in cut {
            self.disconnect(a, b);
        }
    }

    /// Heal every partition (connections are not reopened: see [`Net::connect`]).
    pub fn heal(&mut self) {
        self.group.iter_mut().for_each(|g| *g = 0);
    }

    /// Crash node `i`: its connections are lost, its packets in flight are
    /// lost, and its replicator's state is gone. Its store survives.
    pub fn crash(&mut self, i: usize) {
        let peers: Vec<u64> = self.neighbours(i);
        for p in peers {
            self.disconnect(i as u64, p);
        }
        self.nodes[i].down = true;
    }

    /// Start node `i` again (after a crash, or for the first time when it
    /// joins late) with a fresh replicator over its store, as the node
    /// process does at start-up. The caller hands it the roster's admission
    /// (if any) and opens its connections.
    pub fn restart(&mut self, i: usize) {
        self.nodes[i].rep = Replicator::new(self.config.clone());
        self.nodes[i].gossip = Gossipsub::new(self.now);
        self.nodes[i].cpu = self.cost.as_ref().map(|c| Cpu::new(c.cores));
        self.nodes[i].epoch += 1;
        self.nodes[i].down = false;
        self.nodes[i].view = None;
        self.ensure_view(i);
        self.sync_local(i);
    }

    /// The nodes connected to `i`.
    pub fn neighbours(&self, i: usize) -> Vec<u64> {
        // Every open connection is a gossipsub peer of both ends.
        self.nodes[i].gossip.peers().iter().copied().collect()
    }

    /// Append on node `i` and publish as its node would.
    pub fn append(&mut self, i: usize, key: &AgentKey, payload: &[u8]) -> SignedEntry {
        let _charge = heap::charge(Some(i));
        let now = self.now;
        let (e, r) = self.nodes[i].store.append_reporting(key, payload, now);
        if i < self.honest_nodes {
            self.spread.insert(e.id(), Spread { appended_ms: now, honest_nodes: 1, last_ms: now });
        }
        self.committed(i, &[(e.clone(), Some(payload.to_vec()))], &r);
        e
    }

    /// Node `i`'s own agents wrote `appended` to its store (appended or
    /// forked by hand), which did `r`: tell its replicator as the node's
    /// commit path does ([`agora_sync::Replicator::committed`]), and its
    /// live view.
    pub fn committed(&mut self, i: usize, appended: &[(SignedEntry, Option<Vec<u8>>)], r: &Imported) {
        let _charge = heap::charge(Some(i));
        let now = self.now;
        for p in &r.new_forks {
            self.forks_seen.entry((p.author(), p.seq())).or_default().entry(i).or_insert(now);
        }
        if !self.nodes[i].down {
            self.nodes[i].rep.committed(&r.commit(appended), now);
        }
        if self.live_views && i < self.honest_nodes {
            self.view_commit(i, appended.to_vec(), &r.filled, r.new_forks.iter().map(|p| p.author()).collect());
        }
    }

    /// Run until nothing moves: deliver every packet in flight (letting
    /// virtual time pass to when each is due), and let time pass for the
    /// short timers (announcements coalesced for `ANNOUNCE_INTERVAL_MS`,
    /// `Busy` and `Wait` back-offs) but not for request timeouts, and for
    /// at most [`RUN_TIMERS_MS`] of virtual time: a swarm never settles
    /// while it asks, in rounds, for payloads nobody sends. Returns packets
    /// delivered.
    pub fn run(&mut self) -> usize {
        let start = self.delivered;
        let timers_until = self.now.saturating_add(RUN_TIMERS_MS);
        loop {
            self.run_now();
            // A held-back answer is in flight as a packet is, and so is
            // store work in progress.
            let packet = [self.queue.keys().next(), self.held_back.keys().next(), self.work.keys().next()].into_iter().flatten().map(|k| k.0).min();
            let timer = self.next_timer();
            let short = self.now + BUSY_BACKOFF_MS.max(ANNOUNCE_INTERVAL_MS);
            let next = match (packet, timer) {
                (Some(p), Some(t)) => Some(p.min(t)),
                (Some(p), None) => Some(p),
                (None, Some(t)) if t <= short && t <= timers_until => Some(t),
                _ => None,
            };
            match next {
                Some(t) => self.tick_to(t),
                None => return self.delivered - start,
            }
        }
    }

    /// Run until virtual time `until_ms`: packets and timers (request
    /// timeouts included) fire when due, in time order.
    pub fn run_until(&mut self, until_ms: u64) {
        loop {
            self.run_now();
            let packet = [self.queue.keys().next(), self.work.keys().next()].into_iter().flatten().map(|k| k.0).min();
            let next = [packet, self.next_timer()].into_iter().flatten().min();
            match next {
                Some(t) if t <= until_ms => self.tick_to(t),
                _ => break,
            }
        }
        self.tick_to(until_ms);
        self.run_now();
    }

    /// Let `ms` of virtual time pass (ticking every node), then run.
    pub fn advance(&mut self, ms: u64) {
        self.now += ms;
        let now = self.now;
        self.heartbeats();
        for n in self.nodes.iter_mut().filter(|n| !n.down) {
            n.rep.handle_timeout(now);
        }
        self.run();
    }

    /// Run the gossipsub heartbeats due by now, in time order, each node's
    /// at most a few (one that was due long ago runs late, once; the idle
    /// ones between are caught up).
    fn heartbeats(&mut self) {
        let now = self.now;
        for i in 0..self.nodes.len() {
            if self.nodes[i].down || self.flood {
                continue;
            }
            let _charge = heap::charge(Some(i));
            for _ in 0..8 {
                let Some(at) = self.nodes[i].gossip.next_due().filter(|&t| t <= now) else { break };
                let mut out = Vec::new();
                self.nodes[i].gossip.heartbeat(at, &mut self.gossip_rng, &mut out);
                self.gossip_sends(i, out);
            }
        }
    }

    /// The next time a node's timer is due, after now (a timer due now was
    /// handled: `handle_timeout` ran at this instant).
    fn next_timer(&self) -> Option<u64> {
        let held = self.held_back.keys().next().map(|k| k.0);
        let beats = self.nodes.iter().filter(|n| !n.down && !self.flood).filter_map(|n| n.gossip.next_due());
        self.nodes.iter().filter(|n| !n.down).filter_map(|n| n.rep.poll_timeout()).chain(held).chain(beats).filter(|&t| t > self.now).min()
    }

    /// Move virtual time to `t` (never back) and tick the nodes whose timer is due.
    fn tick_to(&mut self, t: u64) {
        self.now = self.now.max(t);
        let now = self.now;
        self.heartbeats();
        for (i, n) in self.nodes.iter_mut().enumerate().filter(|(_, n)| !n.down) {
            if n.rep.poll_timeout().is_some_and(|due| due <= now) {
                let _charge = heap::charge(Some(i));
                n.rep.handle_timeout(now);
            }
        }
    }

    /// Deliver until nothing moves at this instant. Bounded.
    fn run_now(&mut self) -> usize {
        let start = self.delivered;
        for _ in 0..50_000_000 {
            let mut progressed = self.release_held_back();
            progressed |= self.finish_work();
            for i in 0..self.nodes.len() {
                if self.nodes[i].down {
                    continue;
                }
                let _charge = heap::charge(Some(i));
                while let Some(out) = self.nodes[i].rep.poll() {
                    progressed = true;
                    self.output(i, out);
                }
                self.max_in_flight[i] = self.max_in_flight[i].max(self.nodes[i].rep.in_flight());
            }
            if let Some((sent, (from, to, packet))) = self.pop_due() {
                progressed = true;
                if let Some(trace) = &mut self.trace {
                    trace.push((from, to, sent, self.now));
                }
                self.delivered += 1;
                if self.connected(from, to) {
                    let t = &mut self.nodes[to as usize].traffic;
                    t.messages_received += 1;
                    t.bytes_received += packet.len() as u64;
                    let _charge = heap::charge(Some(to as usize));
                    self.deliver(from, to, packet);
                } else {
                    self.dropped += 1;
                }
            }
            if !progressed {
                return self.delivered - start;
            }
        }
        panic!("network did not settle at {} ms", self.now);
    }

    /// The next packet due now, if any, with its send order: the oldest (or
    /// newest) of those due.
    fn pop_due(&mut self) -> Option<(u64, (u64, u64, Packet))> {
        let now = self.now;
        let key = if self.newest_first {
            self.queue.range(..=(now, u64::MAX)).next_back().map(|(k, _)| *k)
        } else {
            self.queue.keys().next().copied().filter(|k| k.0 <= now)
        };
        key.and_then(|k| self.queue.remove(&k).map(|p| (k.1, p)))
    }

    /// Put a packet on the wire from `from` to `to`: it waits for the
    /// sender's uplink (bandwidth: its bytes over the rate, in ns, with no
    /// floor per packet), then the link's latency; it may be lost. It is
    /// delivered in the ms its last byte arrives, never before a packet sent
    /// earlier on the same directed link.
    fn send(&mut self, from: usize, to: u64, packet: Packet) {
        let bytes = packet.len() as u64;
        let t = &mut self.nodes[from].traffic;
        t.messages_sent += 1;
        t.bytes_sent += bytes;
        let model = self.link_models.get(&link(from as u64, to)).unwrap_or(&self.model).clone();
        if model.loses(&mut self.rng) {
            self.dropped += 1;
            return;
        }
        let mut at = self.now;
        if let Some(rate) = model.bandwidth_bytes_per_s.filter(|r| *r > 0) {
            let done_ns = uplink_done_ns(self.uplink_free_ns[from], self.now, bytes, rate);
            self.uplink_free_ns[from] = done_ns;
            at = done_ns / NS_PER_MS;
        }
        at += model.latency.sample(&mut self.rng);
        let last = self.link_last_ms.entry((from as u64, to)).or_insert(0);
        at = at.max(*last);
        *last = at;
        self.sent += 1;
        self.queue.insert((at, self.sent), (from as u64, to, packet));
    }

    fn output(&mut self, i: usize, out: Output) {
        let now = self.now;
        match out {
            Output::Send(to, Message::Response { req, entries, more }) => {
                let bytes = WireResponse::Entries { req, entries, more }.encode();
                self.send(i, to.0, Packet::Response(Some(req), bytes));
            }
            Output::Send(to, message) => {
                if let Message::Request { start, limit, .. } = &message {
                    self.requests_sent[i] += 1;
                    self.request_log.push((i, to.0, *start, *limit));
                }
                let workspace = self.nodes[i].workspace;
                let request = WireRequest::from_message(workspace, message).expect("frontiers and ranges travel as requests");
                self.send(i, to.0, Packet::Request(request.encode()));
            }
            Output::Publish(g) => self.publish(i, g),
            Output::Import { id, from: _, entries } => {
                if let Some(cost) = &self.cost {
                    let bytes = if cost.commit_ns_per_byte > 0 {
                        entries.iter().map(|e| e.entry().encode().len() + e.payload().map_or(0, <[u8]>::len)).sum()
                    } else {
                        0
                    };
                    let cost_ns = cost.commit_cost_ns(entries.len(), bytes);
                    if self.take_work(i, Lane::Write, cost_ns, Work::Write { id, entries }).is_some() {
                        // The write queue is full: verified but not stored,
                        // reported lost and asked for again.
                        self.lost_writes += 1;
                        self.nodes[i].rep.import_result(id, ImportOutcome::Lost, now);
                    }
                    return;
                }
                self.write(i, id, entries);
            }
            Output::Serve(s) => {
                if self.cost.is_some() {
                    let (peer, req) = (s.peer, s.req);
                    if self.take_work(i, Lane::Read, 0, Work::Read(s)).is_some() {
                        // The read queue is full: the peer is told `Busy`.
                        self.busy_sent += 1;
                        self.send(i, peer.0, Packet::Response(Some(req), WireResponse::Busy.encode()));
                    }
                    return;
                }
                self.serve(i, s);
            }
            Output::Ban { peer, reason, .. } => {
                self.bans.push((i as u64, peer.0, reason));
                self.disconnect(i as u64, peer.0);
            }
            Output::Decline { peer, req, wait_ms } => self.send(i, peer.0, Packet::Response(Some(req), WireResponse::declined(wait_ms).encode())),
            Output::Refused { peer, author, what } => self.refused.push((i as u64, peer.0, author, what)),
            Output::PayloadUnavailable(e) => self.nodes[i].unavailable.push(e),
        }
    }

    /// Queue store work on node `i`'s `lane` costing `cost_ns`; the work
    /// back if its queue is full.
    fn take_work(&mut self, i: usize, lane: Lane, cost_ns: u64, work: Work) -> Option<Work> {
        let now_ns = self.now.saturating_mul(NS_PER_MS);
        let Some(cpu) = self.nodes[i].cpu.as_mut() else { return Some(work) };
        let Some(done_ns) = cpu.take(lane, now_ns, cost_ns) else { return Some(work) };
        if done_ns <= now_ns {
            // Done the instant it is asked for (no cost, no wait): at once,
            // as without a cost model.
            self.do_work(i, work);
            return None;
        }
        self.sent += 1;
        self.work.insert((done_ns.div_ceil(NS_PER_MS), self.sent), (i, self.nodes[i].epoch, work));
        None
    }

    /// Finish the store work due now: true if any was.
    fn finish_work(&mut self) -> bool {
        let mut done = false;
        while let Some(entry) = self.work.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            let (i, epoch, work) = entry.remove();
            done = true;
            // Work of a node that crashed since is gone with it.
            if self.nodes[i].down || self.nodes[i].epoch != epoch {
                continue;
            }
            self.do_work(i, work);
        }
        done
    }

    fn do_work(&mut self, i: usize, work: Work) {
        let _charge = heap::charge(Some(i));
        match work {
            Work::Read(s) => self.serve(i, s),
            Work::Write { id, entries } => self.write(i, id, entries),
            Work::Check { peer, req, entries, more } => self.nodes[i].rep.handle(PeerId(peer), Message::Response { req, entries, more }, self.now),
        }
    }

    /// Import on node `i` and report it, as the node's write thread does.
    fn write(&mut self, i: usize, id: u64, entries: Vec<VerifiedEntry>) {
        let now = self.now;
        let node = &mut self.nodes[i];
        let r = harness::import(&mut node.rep, &mut node.store, id, entries, now);
        self.after_import(i, &r);
        if self.live_views && i < self.honest_nodes {
            let store = &self.nodes[i].store;
            let stored = r.stored.iter().filter_map(|id| store.get(id)).map(|(e, p)| (SignedEntry::clone(e), p.as_deref().map(<[u8]>::to_vec))).collect();
            self.view_commit(i, stored, &r.filled, r.new_forks.iter().map(|p| p.author()).collect());
        }
    }

    /// Read a range for a peer and hand it to the replicator, as the node's
    /// read thread does (or as the node's adversary would).
    fn serve(&mut self, i: usize, s: ServeRequest) {
        let node = &self.nodes[i];
        if matches!(node.behaviour, Behaviour::Withholder | Behaviour::Eclipser) {
            return;
        }
        let mut served = node.store.serve(&s);
        match node.behaviour {
            Behaviour::Stripper => served.iter_mut().for_each(|(_, w)| w.payload = None),
            Behaviour::StripSome { per_mille } => {
                served.iter_mut().filter(|(_, w)| stripped_by(&w.entry, per_mille)).for_each(|(_, w)| w.payload = None);
            }
            Behaviour::Server { delay_ms, answer } => return self.serve_adversarially(i, &s, served, delay_ms, answer),
            Behaviour::StripAuthor { author } if s.author == author => served.iter_mut().for_each(|(_, w)| w.payload = None),
            Behaviour::Corrupter => {
                if let Some((_, w)) = served.get_mut(0) {
                    let n = w.entry.len();
                    w.entry[n - 3] ^= 0x40;
                }
            }
            _ => {}
        }
        self.nodes[i].rep.respond(s, served);
    }

    /// A serving adversary's answer: what the replicator would answer (the
    /// range cut as `Replicator::respond` cuts it), changed by `answer`,
    /// sent `delay_ms` late.
    fn serve_adversarially(&mut self, i: usize, s: &agora_sync::ServeRequest, served: Vec<(u64, WireEntry)>, delay_ms: u64, answer: Answer) {
        if answer == Answer::Silent {
            return;
        }
        let end = s.start.seq.saturating_add(u64::from(s.limit));
        let bytes_max = self.nodes[i].rep.config().response_bytes_max;
        let mut more = served.iter().take_while(|(seq, _)| *seq < end).count() >= s.read_max;
        let (mut entries, mut bytes) = (Vec::new(), 0usize);
        for (seq, w) in served {
            if seq >= end {
                break;
            }
            if entries.len() >= RESPONSE_ENTRIES_MAX || (!entries.is_empty() && bytes + w.wire_len() > bytes_max) {
                more = true;
                break;
            }
            bytes += w.wire_len();
            entries.push(w);
        }
        let (entries, more) = answer.apply(entries, more);
        let packet = Packet::Response(Some(s.req), WireResponse::Entries { req: s.req, entries, more }.encode());
        self.send_later(i, s.peer.0, packet, delay_ms);
    }

    /// Send `packet` once `delay_ms` have passed (an adversary holding an
    /// answer back; other packets on the link are not held behind it).
    fn send_later(&mut self, from: usize, to: u64, packet: Packet, delay_ms: u64) {
        if delay_ms == 0 {
            return self.send(from, to, packet);
        }
        self.sent += 1;
        self.held_back.insert((self.now + delay_ms, self.sent), (from, to, packet));
    }

    /// Send the held-back packets that are due.
    fn release_held_back(&mut self) -> bool {
        let mut released = false;
        while let Some(entry) = self.held_back.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            let (from, to, packet) = entry.remove();
            released = true;
            if !self.nodes[from].down {
                self.send(from, to, packet);
            }
        }
        released
    }

    /// The simulator's own records of an import (the replicator was told
    /// by [`harness::import`]): how far each entry spread, when each node
    /// first held each fork's proof.
    fn after_import(&mut self, i: usize, r: &Imported) {
        let now = self.now;
        if i < self.honest_nodes {
            for id in &r.stored {
                if let Some(s) = self.spread.get_mut(id) {
                    s.honest_nodes += 1;
                    s.last_ms = now;
                }
            }
        }
        for p in &r.new_forks {
            self.forks_seen.entry((p.author(), p.seq())).or_default().entry(i).or_insert(now);
        }
    }

    fn deliver(&mut self, from: u64, to: u64, packet: Packet) {
        let now = self.now;
        let i = to as usize;
        let p = PeerId(from);
        match packet {
            Packet::Request(bytes) => {
                let request = match WireRequest::decode(&bytes) {
                    Ok(r) => r,
                    Err(e) => return self.nodes[i].rep.report_invalid(p, e.to_string(), now),
                };
                if request.workspace() != self.nodes[i].workspace {
                    return self.send(i, from, Packet::Response(None, WireResponse::WrongWorkspace.encode()));
                }
                let message = request.into_message();
                if matches!(message, Message::Frontier(_)) {
                    self.send(i, from, Packet::Response(None, WireResponse::Ack.encode()));
                }
                self.nodes[i].rep.handle(p, message, now);
            }
            Packet::Response(req, bytes) => match WireResponse::decode(&bytes) {
                Ok(WireResponse::Entries { req, entries, more }) => {
                    if let Some(cost) = &self.cost {
                        // Checked on a verify worker (or, its queue full, on the loop).
                        let cost_ns = cost.verify_cost_ns(entries.len());
                        if let Some(Work::Check { entries, .. }) = self.take_work(i, Lane::Check, cost_ns, Work::Check { peer: from, req, entries, more }) {
                            self.nodes[i].rep.handle(p, Message::Response { req, entries, more }, now);
                        }
                        return;
                    }
                    self.nodes[i].rep.handle(p, Message::Response { req, entries, more }, now)
                }
                Ok(WireResponse::Ack) => {}
                Ok(WireResponse::Busy) => {
                    self.busy += 1;
                    if let Some(req) = req {
                        self.nodes[i].rep.busy(p, req, now);
                    }
                }
                Ok(WireResponse::Wait { ms }) => {
                    self.busy += 1;
                    self.waits += 1;
                    if let Some(req) = req {
                        self.nodes[i].rep.wait(p, req, ms, now);
                    }
                }
                Ok(WireResponse::WrongWorkspace) => {
                    self.wrong_workspace += 1;
                    self.disconnect(from, to);
                }
                Err(e) => self.nodes[i].rep.report_invalid(p, e.to_string(), now),
            },
            Packet::Gossip(bytes) => self.receive_gossip(i, from, bytes),
            Packet::Control(c, _) => self.receive_control(i, from, c),
        }
    }

    /// Publish from node `i`, as its gossipsub does: a message whose id is
    /// in its duplicate cache is not published again (gossipsub refuses
    /// it); the rest goes to every peer on the topic (flood publish).
    fn publish(&mut self, i: usize, g: Gossip) {
        let bytes = g.encode();
        let id = gossip_message_id(&bytes);
        let now = self.now;
        if !self.nodes[i].gossip.observe(id, now) {
            self.gossip_traffic.duplicates += 1;
            return;
        }
        if !self.flood {
            self.nodes[i].gossip.accepted(id, bytes.clone(), None, now);
        }
        self.forward(i, None, bytes);
    }

    /// Send a message on from node `i`: its own (`from` none) to every
    /// peer, one it relays to its mesh (or, flooding, to every neighbour
    /// but `from`).
    fn forward(&mut self, i: usize, from: Option<u64>, bytes: Vec<u8>) {
        let targets = if self.flood { self.neighbours(i).into_iter().filter(|&n| Some(n) != from).collect() } else { self.nodes[i].gossip.targets(from) };
        for n in targets {
            self.send_gossip(i, n, bytes.clone());
        }
    }

    fn send_gossip(&mut self, i: usize, to: u64, bytes: Vec<u8>) {
        self.gossip_traffic.messages += 1;
        self.gossip_traffic.message_bytes += bytes.len() as u64;
        self.send(i, to, Packet::Gossip(bytes));
    }

    /// Put what node `i`'s gossipsub wants sent on the wire.
    fn gossip_sends(&mut self, i: usize, out: Vec<Outbound>) {
        for s in out {
            match s {
                Outbound::Control(to, c) => {
                    let len = c.wire_len(self.topic_len);
                    self.gossip_traffic.control += 1;
                    self.gossip_traffic.control_bytes += len as u64;
                    self.send(i, to, Packet::Control(c, len));
                }
                Outbound::Message(to, bytes) => self.send_gossip(i, to, bytes),
            }
        }
    }

    fn receive_control(&mut self, i: usize, from: u64, c: Control) {
        if self.flood {
            return;
        }
        let mut out = Vec::new();
        self.nodes[i].gossip.control(from, c, self.now, &mut out);
        self.gossip_sends(i, out);
    }

    fn receive_gossip(&mut self, i: usize, from: u64, bytes: Vec<u8>) {
        let now = self.now;
        if !self.flood && self.nodes[i].gossip.graylisted(from) {
            return; // everything from a graylisted peer is ignored
        }
        let id = gossip_message_id(&bytes);
        if !self.nodes[i].gossip.observe(id, now) {
            self.gossip_traffic.duplicates += 1;
            return; // a duplicate: dropped before validation
        }
        let verdict = match Gossip::decode(&bytes) {
            Ok(g) => self.nodes[i].rep.gossip(PeerId(from), g, now),
            Err(e) => {
                self.nodes[i].rep.report_invalid(PeerId(from), e.to_string(), now);
                self.nodes[i].gossip.rejected(from, now);
                return;
            }
        };
        match verdict {
            GossipVerdict::Accept => {}
            GossipVerdict::Reject(_) => return self.nodes[i].gossip.rejected(from, now),
            GossipVerdict::Ignore => return,
        }
        if self.nodes[i].behaviour == Behaviour::Eclipser {
            return;
        }
        if let Behaviour::SelectiveRelay { per_mille, delay_ms } = self.nodes[i].behaviour
            && Gossip::decode(&bytes).ok().as_ref().and_then(gossip_author).is_some_and(|a| held_back_author(&a, per_mille))
        {
            if delay_ms > 0 {
                for n in self.neighbours(i).into_iter().filter(|n| *n != from) {
                    self.send_later(i, n, Packet::Gossip(bytes.clone()), delay_ms);
                }
            }
            return;
        }
        let out = match (self.nodes[i].behaviour, Gossip::decode(&bytes)) {
            (Behaviour::StripAuthor { author }, Ok(Gossip::Entry(w))) if gossip_author(&Gossip::Entry(w.clone())) == Some(author) => {
                Gossip::Entry(WireEntry { entry: w.entry, payload: None }).encode()
            }
            (Behaviour::StripSome { per_mille }, Ok(Gossip::Entry(w))) if stripped_by(&w.entry, per_mille) => {
                Gossip::Entry(WireEntry { entry: w.entry, payload: None }).encode()
            }
            // Relays the entry without its payload: a different message.
            (Behaviour::Stripper, Ok(Gossip::Entry(w))) => Gossip::Entry(WireEntry { entry: w.entry, payload: None }).encode(),
            _ => bytes.clone(),
        };
        if out != bytes {
            self.nodes[i].gossip.observe(gossip_message_id(&out), now);
        }
        if !self.flood {
            // What it relays is what it offers in IHAVE (a stripper's copy).
            self.nodes[i].gossip.accepted(gossip_message_id(&out), out.clone(), Some(from), now);
        }
        self.forward(i, Some(from), out);
    }

    /// Publish an arbitrary gossip message as node `origin` (an adversary's own).
    pub fn gossip_from(&mut self, origin: usize, g: Gossip) {
        self.publish(origin, g);
    }

    /// Send raw bytes as a request from `from` to `to` (an adversary's own:
    /// garbage, or a message the replicator would never send).
    pub fn send_raw_request(&mut self, from: usize, to: u64, bytes: Vec<u8>) {
        self.send(from, to, Packet::Request(bytes));
    }

    /// Send raw bytes as a gossip message from `from` to `to`, past its
    /// gossipsub (an adversary's own, or a repeat).
    pub fn send_raw_gossip(&mut self, from: usize, to: u64, bytes: Vec<u8>) {
        self.send_gossip(from, to, bytes);
    }

    /// Packets in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }
}
