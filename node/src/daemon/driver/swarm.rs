//! Events from the libp2p swarm, turned into replicator input: connections,
//! range-sync requests and responses (decoded from their wire bytes, the
//! workspace checked), gossip (decoded, judged by the replicator, the verdict
//! reported to gossipsub), and mDNS finds on the local link (dialled; what
//! a peer lists in identify never is).

use super::Driver;
use super::workers::CheckJob;
use agora_sync::wire::{WireRequest, WireResponse};
use agora_sync::{Gossip, GossipVerdict, Message, PeerId};
use libp2p::swarm::SwarmEvent;
use libp2p::{gossipsub, mdns, request_response};
use std::sync::mpsc as std_mpsc;
use std::time::Instant;
use tracing::debug;

use super::super::network::BehaviourEvent;

pub use agora_sync::queues::PENDING_RESPONSES_MAX;

impl Driver {
    pub(super) fn on_swarm(&mut self, event: SwarmEvent<BehaviourEvent>) {
        let now = self.now_ms();
        {
            use libp2p::metrics::Recorder;
            let m = &self.ctx.histograms.libp2p;
            m.record(&event);
            if let SwarmEvent::Behaviour(b) = &event {
                match b {
                    BehaviourEvent::Gossip(e) => m.record(e),
                    BehaviourEvent::Identify(e) => m.record(e),
                    BehaviourEvent::Ping(e) => m.record(e),
                    _ => {}
                }
            }
        }
        match event {
            SwarmEvent::ConnectionEstablished { peer_id, connection_id, num_established, endpoint, .. } => {
                debug!(%peer_id, addr = %endpoint.get_remote_address(), "connected");
                self.bootstrap_connected(connection_id, peer_id);
                if num_established.get() == 1 && !self.peers.is_foreign(&peer_id) {
                    let p = self.peers.number(peer_id);
                    self.rep.connected(p, now);
                }
            }
            SwarmEvent::ConnectionClosed { peer_id, num_established, .. } => {
                if num_established == 0
                    && let Some(p) = self.peers.known(&peer_id)
                {
                    debug!(%peer_id, "disconnected");
                    self.rep.disconnected(p);
                    self.pending_responses.retain(|(q, _), _| *q != p);
                    self.outbound.retain(|_, (q, _)| *q != p);
                    self.peers.left(peer_id, Instant::now());
                }
            }
            SwarmEvent::NewListenAddr { address, .. } => {
                tracing::info!(%address, "listening");
                self.listen.push(address);
            }
            SwarmEvent::OutgoingConnectionError { peer_id, connection_id, error } => {
                debug!(?peer_id, "dial failed: {error}");
                self.bootstrap_failed(connection_id);
            }
            SwarmEvent::Behaviour(b) => self.on_behaviour(b, now),
            _ => {}
        }
    }

    /// The time from an accepted gossiped entry's signing to now, into the
    /// `/metrics` histogram. Read from the message's own entry bytes (the
    /// replicator has already decoded and checked them).
    fn observe_gossip_latency(&self, data: &[u8]) {
        let entry = match Gossip::decode(data) {
            Ok(Gossip::Entry(w)) => w.entry,
            Ok(Gossip::Announce(bytes)) => bytes,
            _ => return,
        };
        if let Ok(e) = agora_core::SignedEntry::decode(&entry) {
            let late_ms = agora_commands::args::now_ms().saturating_sub(e.header().timestamp_ms);
            self.ctx.histograms.gossip_latency.observe(late_ms as f64 / 1000.0);
        }
    }

    fn on_behaviour(&mut self, event: BehaviourEvent, now: u64) {
        match event {
            BehaviourEvent::Sync(e) => self.on_sync(e, now),
            BehaviourEvent::Gossip(gossipsub::Event::Message { propagation_source, message_id, message }) => {
                self.counters.gossip_received += 1;
                let p = self.peers.number(propagation_source);
                let acceptance = if message.topic != self.topic.hash() {
                    gossipsub::MessageAcceptance::Ignore
                } else {
                    match Gossip::decode(&message.data) {
                        Ok(g) => {
                            let verdict = self.rep.gossip(p, g, now);
                            debug!(%propagation_source, ?verdict, "gossip");
                            match verdict {
                                GossipVerdict::Accept => {
                                    self.observe_gossip_latency(&message.data);
                                    gossipsub::MessageAcceptance::Accept
                                }
                                GossipVerdict::Ignore => gossipsub::MessageAcceptance::Ignore,
                                GossipVerdict::Reject(_) => gossipsub::MessageAcceptance::Reject,
                            }
                        }
                        Err(e) => {
                            self.counters.invalid_wire += 1;
                            self.rep.report_invalid(p, e.to_string(), now);
                            gossipsub::MessageAcceptance::Reject
                        }
                    }
                };
                self.swarm.behaviour_mut().gossip.report_message_validation_result(&message_id, &propagation_source, acceptance);
            }
            BehaviourEvent::Gossip(gossipsub::Event::Subscribed { peer_id, topic }) => debug!(%peer_id, %topic, "subscribed"),
            BehaviourEvent::Gossip(_) => {}
            // What a peer says of its own addresses is never dialled (the
            // dial gate would refuse it anyway): it could name any host.
            BehaviourEvent::Identify(_) => {}
            BehaviourEvent::Mdns(mdns::Event::Discovered(list)) => {
                for (peer, addr) in list {
                    // The gate refuses an address off the local link.
                    if self.peers.dialable(&peer) && !self.swarm.is_connected(&peer) {
                        let opts = libp2p::swarm::dial_opts::DialOpts::peer_id(peer).addresses(vec![addr]).build();
                        let _ = self.swarm.dial(opts);
                    }
                }
            }
            BehaviourEvent::Mdns(_) | BehaviourEvent::Ping(_) => {}
            BehaviourEvent::Blocked(never) | BehaviourEvent::Limits(never) | BehaviourEvent::DialGate(never) | BehaviourEvent::AddressLimits(never) => {
                match never {}
            }
        }
    }

    fn on_sync(&mut self, event: request_response::Event<Vec<u8>, Vec<u8>>, now: u64) {
        match event {
            request_response::Event::Message { peer, message, .. } => {
                let p = self.peers.number(peer);
                match message {
                    request_response::Message::Request { request, channel, .. } => self.on_request(peer, p, request, channel, now),
                    request_response::Message::Response { request_id, response } => {
                        let asked = self.outbound.remove(&request_id).map(|(_, req)| req);
                        self.on_response(peer, p, asked, response, now)
                    }
                }
            }
            request_response::Event::OutboundFailure { peer, request_id, error, .. } => {
                // Unanswered: the replicator's timeout strikes the peer and
                // asks others; nothing to decide here.
                self.outbound.remove(&request_id);
                debug!(%peer, "sync request failed: {error}");
            }
            request_response::Event::InboundFailure { peer, error, .. } => debug!(%peer, "sync response failed: {error}"),
            request_response::Event::ResponseSent { .. } => {}
        }
    }

    /// A response to one of our requests. `asked` is the range request id it
    /// answers (none for a frontier's `Ack`).
    fn on_response(&mut self, peer: libp2p::PeerId, p: PeerId, asked: Option<u64>, bytes: Vec<u8>, now: u64) {
        match WireResponse::decode(&bytes) {
            Ok(WireResponse::Entries { req, entries, more }) => {
                debug!(%peer, req, entries = entries.len(), more, "range received");
                match self.check_tx.try_send(CheckJob { peer: p, req, entries, more }) {
                    Ok(()) => {}
                    // The workers are behind (never more than the requests
                    // in flight, normally): check here.
                    Err(std_mpsc::TrySendError::Full(job) | std_mpsc::TrySendError::Disconnected(job)) => {
                        self.rep.handle(p, Message::Response { req: job.req, entries: job.entries, more: job.more }, now)
                    }
                }
            }
            Ok(WireResponse::Ack) => {}
            Ok(WireResponse::Busy) => {
                self.counters.declined_busy += 1;
                if let Some(req) = asked {
                    self.rep.busy(p, req, now);
                }
            }
            Ok(WireResponse::Wait { ms }) => {
                self.counters.declined_wait += 1;
                if let Some(req) = asked {
                    self.rep.wait(p, req, ms, now);
                }
            }
            Ok(WireResponse::WrongWorkspace) => self.mark_foreign(peer, p),
            Err(e) => {
                self.counters.invalid_wire += 1;
                self.rep.report_invalid(p, e.to_string(), now);
            }
        }
    }

    fn on_request(&mut self, peer: libp2p::PeerId, p: PeerId, bytes: Vec<u8>, channel: request_response::ResponseChannel<Vec<u8>>, now: u64) {
        let request = match WireRequest::decode(&bytes) {
            Ok(r) => r,
            Err(e) => {
                self.counters.invalid_wire += 1;
                self.rep.report_invalid(p, e.to_string(), now);
                return;
            }
        };
        if request.workspace() != self.ctx.workspace {
            self.counters.wrong_workspace += 1;
            let _ = self.swarm.behaviour_mut().sync.send_response(channel, WireResponse::WrongWorkspace.encode());
            return;
        }
        match request.into_message() {
            Message::Request { req, author, start, limit } => {
                if self.pending_responses.len() >= PENDING_RESPONSES_MAX {
                    let _ = self.swarm.behaviour_mut().sync.send_response(channel, WireResponse::Busy.encode());
                    return;
                }
                self.pending_responses.insert((p, req), (channel, Instant::now()));
                self.rep.handle(p, Message::Request { req, author, start, limit }, now);
            }
            frontier => {
                let _ = self.swarm.behaviour_mut().sync.send_response(channel, WireResponse::Ack.encode());
                self.rep.handle(p, frontier, now);
            }
        }
        debug!(%peer, "request handled");
    }
}
