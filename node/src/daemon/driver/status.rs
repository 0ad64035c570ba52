//! What `agora node status` shows, and the sync progress bar: read from the
//! replicator's counters and lag, the swarm and the store, never computed
//! by rules of their own. Bounded whatever peers did: at most
//! `heads_per_author_max` tips per author are listed (the rest counted).

use super::Driver;
use agora_core::AgentId;
use agora_sync::Head;
use serde_json::{Value, json};
use std::collections::BTreeMap;

impl Driver {
    pub(super) fn status(&mut self) -> Value {
        let lag = self.rep.lag();
        let peers: Vec<Value> = self
            .rep
            .peers()
            .into_iter()
            .filter_map(|p| self.peers.libp2p(p).map(|id| (p, id)))
            .map(|(p, id)| {
                json!({
                    "peer_id": id.to_string(),
                    "lag_entries": lag.per_peer.get(&p).copied().unwrap_or(0),
                    "strikes": self.rep.strikes(p).unwrap_or(0),
                })
            })
            .collect();
        let mut frontier: BTreeMap<AgentId, Vec<Head>> = BTreeMap::new();
        for h in self.rep.local_heads() {
            frontier.entry(h.author).or_default().push(h);
        }
        let frontier: Vec<Value> = frontier
            .iter()
            .map(|(a, tips)| {
                json!({
                    "author": a.to_string(),
                    "name": self.display_names.get(a),
                    "max_seq": tips.iter().map(|t| t.seq).max().unwrap_or(0),
                    "forked": tips.len() > 1,
                    "tips": tips.iter().map(|t| json!({ "seq": t.seq, "id": t.id.to_string() })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let stats = self.rep.stats().clone();
        let gossip = &self.swarm.behaviour().gossip;
        let mesh = gossip.mesh_peers(&self.topic.hash()).count();
        let topic_peers = gossip.all_peers().filter(|(_, topics)| topics.contains(&&self.topic.hash())).count();
        let local = *self.swarm.local_peer_id();
        json!({
            "peer_id": local.to_string(),
            "agent": self.ctx.agent.to_string(),
            "listen": self.listen.iter().map(|a| format!("{a}/p2p/{local}")).collect::<Vec<_>>(),
            "workspace": { "name": self.ctx.config.workspace, "id": self.ctx.workspace.to_string(), "founder": self.ctx.founder.to_string(), "members": self.roster_members,
                "admins": self.roster_admins.iter().map(|a| a.to_string()).collect::<Vec<_>>(), "threshold": self.roster_threshold },
            "uptime_ms": self.now_ms(),
            "store_memory": self.ctx.store.memory_usage().ok(),
            "memory": crate::metrics::allocator_memory(),
            "peers": peers,
            "frontier": frontier,
            "sync": {
                "lag_entries": lag.total,
                "lag_by_author": lag.per_author.iter().map(|(a, l)| json!({ "author": a.to_string(), "lag_entries": l })).collect::<Vec<_>>(),
                "in_flight": self.rep.in_flight(),
                "held_responses": self.rep.held(),
                "pending_imports": self.rep.pending_imports(),
                "entries_imported": self.counters.entries_imported,
                "entries_verified": stats.entries_verified,
                "imports_shed": self.counters.imports_shed,
                "claims_held": self.rep.claims_held(),
                "payloads_sought": self.rep.payloads_sought(),
                "payloads_refetched": stats.payloads_refetched,
                "payloads_unavailable": stats.payloads_unavailable,
                "imports_deferred": stats.deferred,
                "hedged": stats.hedged,
                "declined": { "busy": self.counters.declined_busy, "wait": self.counters.declined_wait },
                "tips_handled": self.rep.tips_handled(),
            },
            "rejected": {
                "bans": stats.bans,
                "refused_not_admitted": stats.refused_not_admitted,
                "rate_limited": stats.rate_limited,
                "author_rate_limited": stats.author_rate_limited,
                "gossip_rejected": stats.gossip_rejected,
                "requests_shed": stats.requests_shed,
                "withheld": stats.withheld,
                "claims_dropped": stats.claims_dropped,
                "short_answers": stats.short_answers,
                "gossip_not_new": stats.gossip_not_new,
                "malformed_messages": self.counters.invalid_wire,
                "wrong_workspace": self.counters.wrong_workspace,
                "recent_bans": self.peers.recent_bans.iter().cloned().collect::<Vec<_>>(),
                "connections_refused_per_address": self.swarm.behaviour().address_limits.refused,
            },
            "peer_book": { "numbered": self.peers.numbered(), "foreign": self.peers.foreign_count(), "banned": self.peers.blocked_until.len() },
            "gossip": { "mesh_peers": mesh, "topic_peers": topic_peers, "published": self.counters.gossip_published, "received": self.counters.gossip_received },
            "commit_notices_missed": self.counters.commits_missed,
        })
    }

    /// The progress bar (when standard error is a terminal): entries
    /// imported against what peers announced beyond us.
    pub(super) fn update_progress(&self) {
        let Some(bar) = &self.progress else { return };
        let lag = self.rep.lag().total;
        let done = self.counters.entries_imported;
        if lag > 0 {
            bar.set_length(done + lag);
            bar.set_position(done);
        } else {
            bar.set_length(done.max(1));
            bar.set_position(done.max(1));
        }
    }
}
