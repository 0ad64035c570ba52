//! The replicator's configuration: its limits and timings, with the node's defaults.

/// Limits and timings. Every queue and message is bounded by one of these.
#[derive(Clone, Debug)]
pub struct Config {
    /// Most seqs asked for (and served) in one range request.
    pub range_limit: u32,
    /// Most bytes (entries and payloads) served in one response; a response
    /// is cut at an entry boundary to fit and marked `more`.
    pub response_bytes_max: usize,
    /// Most requests in flight to one peer.
    pub in_flight_per_peer: usize,
    /// Most requests in flight in all (bounds the memory that responses can
    /// occupy: `in_flight_max * response_bytes_max`). Planned requests go
    /// out only below it, so at most `in_flight_max - 1 +`
    /// [`RETRY_FANOUT_MAX`] are in flight (a fan-out sends several at once);
    /// the follow-ups of imports (a backfill, a resumed range) come on top.
    pub in_flight_max: usize,
    /// A request for a whole range (`range_limit` seqs) unanswered for this
    /// long is struck and asked again, of every other peer that claims the
    /// range. A smaller request gets a deadline in proportion, never below
    /// `request_timeout_base_ms`: see [`Config::request_timeout_base_ms`].
    pub request_timeout_ms: u64,
    /// The deadline of a request scales with what it asks for: a request for
    /// `n` seqs gets `base + (request_timeout_ms − base) × n / range_limit`
    /// milliseconds, with `base` this value (at most `request_timeout_ms`).
    pub request_timeout_base_ms: u64,
    /// Hedging: a request still unanswered after `hedge_slowdown` times the
    /// time the fastest other claimant would take for it at its measured
    /// rate (and never before `hedge_min_ms`) is asked of that claimant too;
    /// the first answer settles both. With no claimant measured yet, a
    /// request is hedged at half its deadline.
    pub hedge_min_ms: u64,
    /// See [`Config::hedge_min_ms`]: how many times slower than the best
    /// other claimant a request may be before it is hedged (at least 1).
    pub hedge_slowdown: u32,
    /// How long a peer that sent invalid data is ignored.
    pub ban_ms: u64,
    /// Most heads in one frontier message. Longer frontiers are sent as
    /// several messages; a peer that sends a longer one is banned.
    pub frontier_heads_max: usize,
    /// Every connected peer is sent our whole frontier again this often
    /// (0: only on connecting). A peer's claims are dropped when it lets a
    /// request time out or answers empty, and it announces only tips that
    /// change: without this, one lost packet could leave an honest peer's
    /// claims forgotten for as long as the connection lasts.
    pub frontier_refresh_ms: u64,
    /// Most tips kept (and announced) per author and peer: a chain forked a
    /// thousand ways is fetched by seq, not by tip, so more would only cost
    /// memory. The highest-seq tips are kept.
    pub heads_per_author_max: usize,
    /// Most heads of authors outside the roster remembered per peer (they
    /// are requested if the author is admitted later); beyond it they are
    /// dropped and the peer is scored down.
    pub non_member_heads_per_peer: usize,
    /// Most outputs queued before the driver drains them; beyond it, new
    /// requests wait (never dropped silently: they are re-planned on timeout)
    /// and requests from peers are refused (the peer asks again on its timeout).
    pub outputs_max: usize,
    /// Unsolicited messages of its own (frontiers, range requests) a peer may
    /// send per second, sustained. Excess messages are dropped and counted.
    pub peer_messages_per_s: u32,
    /// Burst allowance on top of the sustained rate.
    pub peer_messages_burst: u32,
    /// A peer that sends this many of its own messages beyond its budget
    /// within one second is banned as a flooder.
    pub peer_flood_ban_after: u32,
    /// Gossip charges the entry's author, not the relay that forwarded it:
    /// entries of one author accepted per second, sustained. Excess is
    /// dropped silently (it arrives by range sync later); no relay is ever
    /// banned for forwarding valid entries.
    pub author_gossip_per_s: u32,
    /// Burst allowance of an author's gossip.
    pub author_gossip_burst: u32,
    /// Most entries held without their payload that are asked of peers at
    /// once; more wait in the store's list.
    pub missing_payloads_max: usize,
    /// Peers asked for a missing payload before it is reported unavailable.
    pub payload_tries_max: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            range_limit: 1000,
            response_bytes_max: 2 << 20,
            in_flight_per_peer: 4,
            in_flight_max: 16,
            request_timeout_ms: 10_000,
            request_timeout_base_ms: 2_000,
            hedge_min_ms: 500,
            hedge_slowdown: 2,
            ban_ms: 600_000,
            frontier_heads_max: 50_000,
            frontier_refresh_ms: 30_000,
            heads_per_author_max: 64,
            non_member_heads_per_peer: 256,
            outputs_max: 10_000,
            peer_messages_per_s: 500,
            peer_messages_burst: 2_000,
            peer_flood_ban_after: 10_000,
            author_gossip_per_s: 1_000,
            author_gossip_burst: 20_000,
            missing_payloads_max: 4_096,
            payload_tries_max: 8,
        }
    }
}
