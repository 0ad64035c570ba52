//! The libp2p side of the node: transport, behaviours and the sync codec.
//!
//! TCP + noise + yamux (QUIC with the `quic` feature); identify; ping; mDNS
//! (switchable); gossipsub (one topic per workspace, message id = SHA-256
//! of the gossip bytes, messages validated by the replicator before they
//! are forwarded, peer scoring on); request-response for range sync (raw
//! bytes, size-limited; `agora_sync::wire` decodes them); a block list for
//! banned peers; connection limits in all, per peer and per address; and a
//! dial gate (`peer_limits.rs`).
//!
//! No discovery through peers (no Kademlia, no gossipsub peer exchange, no
//! dial of an address a peer lists in identify): a node connects to the
//! addresses its operator gave it, to what mDNS finds on the local link
//! when it is on, and takes the connections peers make to it. An address a
//! peer names is never dialled, so no peer can point the swarm at a host.

use super::peer_limits::{AddressLimits, DialGate};
use agora_sync::gossip as gp;
use agora_sync::wire::{REQUEST_BYTES_MAX, RESPONSE_BYTES_MAX, SYNC_PROTOCOL, gossip_message_id};
use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use libp2p::swarm::NetworkBehaviour;
use libp2p::swarm::behaviour::toggle::Toggle;
use libp2p::{Multiaddr, StreamProtocol, Swarm, identity::Keypair};
use libp2p::{allow_block_list, connection_limits, gossipsub, identify, mdns, noise, ping, request_response, tcp, yamux};
use std::io;
use std::time::Duration;

/// Settings of the network layer that tests and deployments change.
#[derive(Clone, Debug)]
pub struct NetworkSettings {
    /// mDNS discovery on the local network.
    pub mdns: bool,
    /// Gossipsub heartbeat (the default 1 s delays the mesh; tests lower it).
    pub heartbeat: Duration,
    /// Request-response timeout.
    pub request_timeout: Duration,
    /// Most established connections in all.
    pub max_connections: u32,
    /// Connections (pending and established) from one address.
    pub connections_per_ip_max: u32,
    /// Close connections idle for this long.
    pub idle_timeout: Duration,
    /// The operator's addresses: the only ones dialled, with mDNS's local finds.
    pub bootstrap: Vec<Multiaddr>,
}

/// Of the connection slots, these stay for the node's own dials (its
/// configured peers, mDNS finds): peers that connect in, sybils among them,
/// can take at most the rest, so they cannot cut the node off from the
/// peers its operator chose.
pub const OUTBOUND_RESERVED: u32 = 32;
/// Dials in flight at once (configured peers and mDNS finds): a flood of
/// mDNS announcements costs at most this many sockets at a time.
pub const PENDING_OUTGOING_MAX: u32 = 16;
/// Handshakes in flight from peers connecting in.
pub const PENDING_INCOMING_MAX: u32 = 32;
/// Connections to one peer at once (a dial each way when two peers find
/// each other at the same moment).
pub const CONNECTIONS_PER_PEER_MAX: u32 = 2;

impl Default for NetworkSettings {
    fn default() -> Self {
        Self {
            mdns: true,
            heartbeat: Duration::from_millis(gp::HEARTBEAT_MS),
            request_timeout: Duration::from_secs(30),
            max_connections: 256,
            connections_per_ip_max: agora_home::config::CONNECTIONS_PER_IP_DEFAULT,
            idle_timeout: Duration::from_secs(120),
            bootstrap: Vec::new(),
        }
    }
}

/// Every behaviour the node runs.
#[derive(NetworkBehaviour)]
pub struct Behaviour {
    pub dial_gate: DialGate,
    pub blocked: allow_block_list::Behaviour<allow_block_list::BlockedPeers>,
    pub address_limits: AddressLimits,
    pub limits: connection_limits::Behaviour,
    pub identify: identify::Behaviour,
    pub ping: ping::Behaviour,
    pub mdns: Toggle<mdns::tokio::Behaviour>,
    pub gossip: gossipsub::Behaviour,
    pub sync: request_response::Behaviour<SyncCodec>,
}

/// Length-prefixed raw bytes for [`SYNC_PROTOCOL`], with the wire limits
/// enforced before a buffer is allocated.
#[derive(Clone, Copy, Debug, Default)]
pub struct SyncCodec;

async fn read_frame<T: AsyncRead + Unpin + Send>(io: &mut T, max: usize) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    io.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len) as usize;
    if len > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("frame of {len} bytes exceeds the limit of {max}")));
    }
    let mut buf = vec![0u8; len];
    io.read_exact(&mut buf).await?;
    Ok(buf)
}

async fn write_frame<T: AsyncWrite + Unpin + Send>(io: &mut T, bytes: &[u8], max: usize) -> io::Result<()> {
    if bytes.len() > max {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("frame of {} bytes exceeds the limit of {max}", bytes.len())));
    }
    io.write_all(&(bytes.len() as u32).to_be_bytes()).await?;
    io.write_all(bytes).await?;
    io.close().await
}

impl request_response::Codec for SyncCodec {
    type Protocol = StreamProtocol;
    type Request = Vec<u8>;
    type Response = Vec<u8>;

    async fn read_request<T: AsyncRead + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Vec<u8>> {
        read_frame(io, REQUEST_BYTES_MAX).await
    }
    async fn read_response<T: AsyncRead + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Vec<u8>> {
        read_frame(io, RESPONSE_BYTES_MAX).await
    }
    async fn write_request<T: AsyncWrite + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T, req: Vec<u8>) -> io::Result<()> {
        write_frame(io, &req, REQUEST_BYTES_MAX).await
    }
    async fn write_response<T: AsyncWrite + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T, res: Vec<u8>) -> io::Result<()> {
        write_frame(io, &res, RESPONSE_BYTES_MAX).await
    }
}

/// Gossipsub peer scoring for the workspace topic ([`agora_sync::gossip`]): invalid messages (P4)
/// weigh heavily, so a peer relaying bad entries is graylisted well before
/// its ban would have to be enforced by hand.
fn peer_score(topic: &gossipsub::IdentTopic) -> (gossipsub::PeerScoreParams, gossipsub::PeerScoreThresholds) {
    let mut params =
        gossipsub::PeerScoreParams { decay_interval: Duration::from_millis(gp::DECAY_INTERVAL_MS), decay_to_zero: gp::DECAY_TO_ZERO, ..Default::default() };
    let topic_params = gossipsub::TopicScoreParams {
        topic_weight: gp::TOPIC_WEIGHT,
        invalid_message_deliveries_weight: gp::INVALID_MESSAGE_DELIVERIES_WEIGHT,
        invalid_message_deliveries_decay: gp::INVALID_MESSAGE_DELIVERIES_DECAY,
        // Reward timely first deliveries a little.
        first_message_deliveries_weight: gp::FIRST_MESSAGE_DELIVERIES_WEIGHT,
        first_message_deliveries_decay: gp::FIRST_MESSAGE_DELIVERIES_DECAY,
        first_message_deliveries_cap: gp::FIRST_MESSAGE_DELIVERIES_CAP,
        // Small swarms cannot promise a delivery rate: no P3 penalty.
        mesh_message_deliveries_weight: 0.0,
        mesh_failure_penalty_weight: 0.0,
        ..Default::default()
    };
    params.topics.insert(topic.hash(), topic_params);
    let thresholds = gossipsub::PeerScoreThresholds {
        gossip_threshold: gp::GOSSIP_THRESHOLD,
        publish_threshold: gp::PUBLISH_THRESHOLD,
        graylist_threshold: gp::GRAYLIST_THRESHOLD,
        ..Default::default()
    };
    (params, thresholds)
}

/// Build the swarm for `key`, subscribed to `topic`.
pub fn build_swarm(key: Keypair, topic: &gossipsub::IdentTopic, settings: &NetworkSettings) -> anyhow::Result<Swarm<Behaviour>> {
    let settings = settings.clone();
    let topic = topic.clone();
    let builder = libp2p::SwarmBuilder::with_existing_identity(key).with_tokio().with_tcp(
        tcp::Config::default().nodelay(true),
        noise::Config::new,
        yamux::Config::default,
    )?;
    #[cfg(feature = "quic")]
    let builder = builder.with_quic();
    // `/dns4/<name>/tcp/<port>` addresses (a swarm's service names in
    // containers), resolved with the system's resolver configuration.
    let builder = builder.with_dns()?;
    let swarm = builder
        .with_behaviour(|key| -> Result<Behaviour, Box<dyn std::error::Error + Send + Sync>> {
            let peer_id = key.public().to_peer_id();
            let gossip_config = gossipsub::ConfigBuilder::default()
                .heartbeat_interval(settings.heartbeat)
                .heartbeat_initial_delay(Duration::from_millis(gp::HEARTBEAT_INITIAL_DELAY_MS))
                .mesh_n(gp::MESH_N)
                .mesh_n_low(gp::MESH_N_LOW)
                .mesh_n_high(gp::MESH_N_HIGH)
                .retain_scores(gp::RETAIN_SCORES)
                .gossip_lazy(gp::GOSSIP_LAZY)
                .gossip_factor(gp::GOSSIP_FACTOR_PERCENT as f64 / 100.0)
                .history_length(gp::HISTORY_LENGTH)
                .history_gossip(gp::HISTORY_GOSSIP)
                .max_control_messages_sent(gp::MAX_IHAVE_LENGTH)
                .max_ihave_messages_heartbeat(gp::MAX_IHAVE_MESSAGES)
                .gossip_retransimission(gp::GOSSIP_RETRANSMISSION)
                .prune_backoff(Duration::from_millis(gp::PRUNE_BACKOFF_MS))
                .validation_mode(gossipsub::ValidationMode::Strict)
                .validate_messages()
                .max_transmit_size(gp::MAX_TRANSMIT_BYTES)
                .message_id_fn(|m: &gossipsub::Message| gossipsub::MessageId::from(gossip_message_id(&m.data).to_vec()))
                .duplicate_cache_time(Duration::from_millis(gp::DUPLICATE_CACHE_MS))
                // Small swarms: publish to every subscribed peer, not only the mesh.
                .flood_publish(gp::FLOOD_PUBLISH)
                .build()
                .map_err(|e| format!("gossipsub config: {e}"))?;
            let mut gossip = gossipsub::Behaviour::new(gossipsub::MessageAuthenticity::Signed(key.clone()), gossip_config)?;
            let (params, thresholds) = peer_score(&topic);
            gossip.with_peer_score(params, thresholds)?;
            gossip.subscribe(&topic)?;
            let mdns = if settings.mdns { Some(mdns::tokio::Behaviour::new(mdns::Config::default(), peer_id)?) } else { None };
            let sync = request_response::Behaviour::with_codec(
                SyncCodec,
                [(StreamProtocol::new(SYNC_PROTOCOL), request_response::ProtocolSupport::Full)],
                request_response::Config::default().with_request_timeout(settings.request_timeout).with_max_concurrent_streams(64),
            );
            let limits = connection_limits::ConnectionLimits::default()
                .with_max_established(Some(settings.max_connections))
                .with_max_established_incoming(Some(settings.max_connections.saturating_sub(OUTBOUND_RESERVED)))
                .with_max_established_per_peer(Some(CONNECTIONS_PER_PEER_MAX))
                .with_max_pending_incoming(Some(PENDING_INCOMING_MAX))
                .with_max_pending_outgoing(Some(PENDING_OUTGOING_MAX));
            // Identify keeps no peer's listen addresses: nothing dials them.
            let identify = identify::Config::new("/agora/1.0.0".into(), key.public()).with_cache_size(0);
            Ok(Behaviour {
                dial_gate: DialGate::new(&settings.bootstrap, settings.mdns),
                blocked: allow_block_list::Behaviour::default(),
                address_limits: AddressLimits::new(settings.connections_per_ip_max),
                limits: connection_limits::Behaviour::new(limits),
                identify: identify::Behaviour::new(identify),
                ping: ping::Behaviour::default(),
                mdns: Toggle::from(mdns),
                gossip,
                sync,
            })
        })?
        .with_swarm_config(|c| c.with_idle_connection_timeout(settings.idle_timeout))
        .build();
    Ok(swarm)
}
