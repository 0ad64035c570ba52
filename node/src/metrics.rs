//! `/metrics`: the node's figures in the Prometheus text format.
//!
//! Two kinds of figures. Those the node already keeps (entries per author,
//! peers, sync lag, entries verified, rejected input by rule, bans, gossip
//! counts) are read from the status snapshot at each scrape, so the metrics
//! and `agora node status` can never disagree. Those that are
//! distributions over time (how long gossip took to arrive, how long a full
//! recompute of the reasoning view took) are histograms kept here, observed
//! where the events happen. libp2p's own metrics (`libp2p_*`) come from its
//! metrics crate, fed every swarm event by the event loop.

use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use serde_json::Value;

/// Histograms kept across scrapes, and libp2p's own metrics.
#[derive(Clone)]
pub struct Histograms {
    /// libp2p's metrics (`libp2p_*`: connections, dials, listeners,
    /// identify, Kademlia, ping round trips, gossipsub), recorded by the
    /// event loop from the swarm's events into their own registry.
    pub libp2p: std::sync::Arc<libp2p::metrics::Metrics>,
    libp2p_registry: std::sync::Arc<Registry>,
    /// Seconds from an entry's signing (its timestamp) to its arrival here
    /// by gossip, for gossip accepted. A timestamp is its author's claim,
    /// so this is a measurement for operators, never an input to a decision.
    pub gossip_latency: Histogram,
    /// Seconds to rebuild the reasoning view by replay (the live graph is
    /// otherwise updated entry by entry).
    pub view_recompute: Histogram,
    /// Seconds to build the live merged view from the store (at start, and
    /// after a roster change).
    pub merge_rebuild: Histogram,
    /// Seconds from a commit until the live merged view includes it.
    pub merge_lag: Histogram,
    /// Perspectives built by replay (`MergeCache::with_perspective_builds`).
    pub perspective_build: Histogram,
}

impl Default for Histograms {
    fn default() -> Self {
        let latency = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
        let recompute = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
        // libp2p-metrics names its own metrics `libp2p_*`.
        let mut libp2p_registry = Registry::default();
        let libp2p = std::sync::Arc::new(libp2p::metrics::Metrics::new(&mut libp2p_registry));
        Self {
            libp2p,
            libp2p_registry: std::sync::Arc::new(libp2p_registry),
            gossip_latency: Histogram::new(latency),
            view_recompute: Histogram::new(recompute),
            merge_rebuild: Histogram::new(recompute),
            merge_lag: Histogram::new(recompute),
            perspective_build: Histogram::new(recompute),
        }
    }
}

type Labels = Vec<(String, String)>;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The text exposition: `status` (the node's status snapshot) and the
/// histograms.
pub fn render(status: &Value, histograms: &Histograms) -> String {
    let mut r = Registry::with_prefix("agora");
    let gauge = |r: &mut Registry, name: &str, help: &str, v: u64| {
        let g: Gauge = Gauge::default();
        g.set(i64::try_from(v).unwrap_or(i64::MAX));
        r.register(name, help, g);
    };
    let counter = |r: &mut Registry, name: &str, help: &str, v: u64| {
        let c: Counter = Counter::default();
        c.inc_by(v);
        r.register(name, help, c);
    };

    // Entries by author: the highest seq held of each chain.
    let entries: Family<Labels, Gauge> = Family::default();
    let forked: Family<Labels, Gauge> = Family::default();
    for a in status["frontier"].as_array().into_iter().flatten() {
        let author = vec![("author".to_string(), a["author"].as_str().unwrap_or_default().to_string())];
        entries.get_or_create(&author).set(i64::try_from(u(&a["max_seq"])).unwrap_or(i64::MAX));
        forked.get_or_create(&author).set(i64::from(a["forked"].as_bool().unwrap_or(false)));
    }
    r.register("chain_entries", "Entries held of each author's chain (its highest seq)", entries);
    r.register("chain_forked", "1 when an author's chain is forked here (a proof is held)", forked);

    let peers = status["peers"].as_array().cloned().unwrap_or_default();
    gauge(&mut r, "peers", "Connected peers replicating with this node", peers.len() as u64);
    let peer_lag: Family<Labels, Gauge> = Family::default();
    for p in &peers {
        peer_lag
            .get_or_create(&vec![("peer".to_string(), p["peer_id"].as_str().unwrap_or_default().to_string())])
            .set(i64::try_from(u(&p["lag_entries"])).unwrap_or(i64::MAX));
    }
    r.register("peer_lag_entries", "Entries a peer claims beyond what this node holds", peer_lag);

    let sync = &status["sync"];
    gauge(&mut r, "sync_lag_entries", "Entries claimed by peers beyond what this node holds, over all authors", u(&sync["lag_entries"]));
    let author_lag: Family<Labels, Gauge> = Family::default();
    for a in sync["lag_by_author"].as_array().into_iter().flatten() {
        author_lag
            .get_or_create(&vec![("author".to_string(), a["author"].as_str().unwrap_or_default().to_string())])
            .set(i64::try_from(u(&a["lag_entries"])).unwrap_or(i64::MAX));
    }
    r.register("author_lag_entries", "Entries of an author's chain claimed by a peer beyond what this node holds (authors behind only)", author_lag);
    gauge(&mut r, "sync_in_flight_requests", "Range requests awaiting an answer", u(&sync["in_flight"]));
    counter(&mut r, "entries_verified", "Entries whose signatures this node verified (rate: the verify rate)", u(&sync["entries_verified"]));
    counter(&mut r, "entries_imported", "Entries imported from peers", u(&sync["entries_imported"]));
    counter(&mut r, "payloads_refetched", "Missing payloads fetched again from peers", u(&sync["payloads_refetched"]));

    // Rejected input, by the rule that rejected it.
    let rejected: Family<Labels, Counter> = Family::default();
    let rej = &status["rejected"];
    for rule in [
        "refused_not_admitted",
        "rate_limited",
        "author_rate_limited",
        "gossip_rejected",
        "requests_shed",
        "withheld",
        "claims_dropped",
        "short_answers",
        "gossip_not_new",
        "malformed_messages",
        "wrong_workspace",
    ] {
        rejected.get_or_create(&vec![("rule".to_string(), rule.to_string())]).inc_by(u(&rej[rule]));
    }
    r.register("rejected_inputs", "Input refused, by the rule that refused it", rejected);
    counter(&mut r, "bans", "Peers banned for breaking the protocol", u(&rej["bans"]));

    // The allocator's figures: what the node's structures hold (allocated)
    // against what the process keeps resident for them.
    let memory: Family<Labels, Gauge> = Family::default();
    for kind in ["allocated", "active", "metadata", "resident", "mapped", "retained"] {
        if let Some(v) = status["memory"][kind].as_u64() {
            memory.get_or_create(&vec![("kind".to_string(), kind.to_string())]).set(i64::try_from(v).unwrap_or(i64::MAX));
        }
    }
    r.register("allocator_bytes", "The allocator's statistics (jemalloc's stats.*), by kind", memory);

    let gossip = &status["gossip"];
    gauge(&mut r, "gossip_mesh_peers", "Peers in this node's gossip mesh", u(&gossip["mesh_peers"]));
    counter(&mut r, "gossip_published", "Gossip messages published", u(&gossip["published"]));
    counter(&mut r, "gossip_received", "Gossip messages received", u(&gossip["received"]));
    r.register("gossip_latency_seconds", "From an entry's timestamp to its arrival here by gossip (accepted gossip only)", histograms.gossip_latency.clone());
    r.register("view_recompute_seconds", "Time to rebuild the reasoning view by replay", histograms.view_recompute.clone());
    r.register(
        "merge_view_rebuild_seconds",
        "Time to build the live merged view from the store (at start, after a roster change)",
        histograms.merge_rebuild.clone(),
    );
    r.register("merge_view_lag_seconds", "From a commit until the live merged view includes it", histograms.merge_lag.clone());
    r.register(
        "perspective_build_seconds",
        "Time to build a perspective by replay (first asked, or asked again after it could not be kept current in place)",
        histograms.perspective_build.clone(),
    );

    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = encode_registry(&mut out, &r);
    let _ = encode_registry(&mut out, &histograms.libp2p_registry);
    let _ = encode_eof(&mut out);
    out
}

/// The allocator's statistics, in bytes (jemalloc's `stats.*`, refreshed
/// first): `allocated` is what the node's structures hold; `resident` what
/// the allocator keeps in memory for them (the difference is fragmentation
/// and pages not yet returned); `retained` address space kept for reuse,
/// not memory. `None` where the statistics cannot be read.
pub fn allocator_memory() -> Option<Value> {
    use tikv_jemalloc_ctl::{epoch, stats};
    epoch::advance().ok()?;
    Some(serde_json::json!({
        "allocated": stats::allocated::read().ok()?,
        "active": stats::active::read().ok()?,
        "metadata": stats::metadata::read().ok()?,
        "resident": stats::resident::read().ok()?,
        "mapped": stats::mapped::read().ok()?,
        "retained": stats::retained::read().ok()?,
    }))
}
