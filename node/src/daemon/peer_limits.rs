//! Two network edges the node bounds itself, as libp2p behaviours that
//! refuse a connection before it costs more than a socket.
//!
//! - [`DialGate`]: the node dials only addresses it was given, never one a
//!   peer names. A dial must carry its addresses, and each must be one the
//!   operator configured (a bootstrap address) or, with mDNS on, one
//!   announced on the local link with an address that is not globally
//!   routable. A dial by peer id alone (where libp2p would ask every
//!   behaviour for addresses it heard: identify's listen addresses, mDNS's)
//!   is refused. So no peer can make the node connect to a host and port of
//!   its choosing: not by listing it in identify, not through a discovery
//!   answer, not by a request the node sends it after it left.
//! - [`AddressLimits`]: at most `connections_per_ip_max` connections
//!   (pending and established, both directions) from or to one address (an
//!   IPv4 address, an IPv6 /64: what one host or one subscriber holds), so
//!   identities made for nothing (sybils) on one host cannot fill the
//!   node's connection slots. Inbound connections over the limit are
//!   refused as they arrive; the node's own dials are counted, never
//!   refused (it chose them).

use libp2p::core::Endpoint;
use libp2p::core::transport::PortUse;
use libp2p::multiaddr::Protocol;
use libp2p::swarm::{
    ConnectionClosed, ConnectionDenied, ConnectionId, DialFailure, FromSwarm, ListenFailure, NetworkBehaviour, THandler, THandlerInEvent, THandlerOutEvent,
    ToSwarm, dummy,
};
use libp2p::{Multiaddr, PeerId};
use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::net::IpAddr;
use std::task::{Context, Poll};

/// Is `ip` one that is not routed on the Internet (loopback, private,
/// link-local, unique-local)? The only addresses an mDNS announcement may
/// name: mDNS is link-local, and so are the hosts it may send the node to.
pub fn local_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
        IpAddr::V6(v6) => {
            let unique_local = (v6.segments()[0] & 0xfe00) == 0xfc00;
            let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
            v6.is_loopback() || unique_local || link_local || v6.to_ipv4_mapped().is_some_and(|v4| local_ip(IpAddr::V4(v4)))
        }
    }
}

/// The IP address an address starts with, if it names one.
fn ip_of(addr: &Multiaddr) -> Option<IpAddr> {
    match addr.iter().next()? {
        Protocol::Ip4(ip) => Some(IpAddr::V4(ip)),
        Protocol::Ip6(ip) => Some(IpAddr::V6(ip)),
        _ => None,
    }
}

/// An address as a configured one is written: without its `/p2p/` part.
fn without_peer(addr: &Multiaddr) -> Multiaddr {
    addr.iter().filter(|p| !matches!(p, Protocol::P2p(_))).collect()
}

/// Refuses every dial but to the operator's addresses and, with mDNS on,
/// link-local announcements (see the module's docs).
pub struct DialGate {
    configured: HashSet<Multiaddr>,
    mdns: bool,
}

impl DialGate {
    pub fn new(configured: &[Multiaddr], mdns: bool) -> Self {
        Self { configured: configured.iter().map(without_peer).collect(), mdns }
    }

    /// May the node dial `addr`?
    pub fn allows(&self, addr: &Multiaddr) -> bool {
        self.configured.contains(&without_peer(addr)) || (self.mdns && ip_of(addr).is_some_and(local_ip))
    }
}

impl NetworkBehaviour for DialGate {
    type ConnectionHandler = dummy::ConnectionHandler;
    type ToSwarm = Infallible;

    fn handle_established_inbound_connection(&mut self, _: ConnectionId, _: PeerId, _: &Multiaddr, _: &Multiaddr) -> Result<THandler<Self>, ConnectionDenied> {
        Ok(dummy::ConnectionHandler)
    }

    fn handle_pending_outbound_connection(
        &mut self,
        _: ConnectionId,
        _: Option<PeerId>,
        addresses: &[Multiaddr],
        _: Endpoint,
    ) -> Result<Vec<Multiaddr>, ConnectionDenied> {
        if addresses.is_empty() {
            return Err(ConnectionDenied::new("a dial by peer id alone: the node dials only addresses it was given"));
        }
        if let Some(addr) = addresses.iter().find(|a| !self.allows(a)) {
            return Err(ConnectionDenied::new(format!("{addr} is neither configured nor a local mDNS address")));
        }
        Ok(Vec::new())
    }

    fn handle_established_outbound_connection(
        &mut self,
        _: ConnectionId,
        _: PeerId,
        _: &Multiaddr,
        _: Endpoint,
        _: PortUse,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        Ok(dummy::ConnectionHandler)
    }

    fn on_swarm_event(&mut self, _: FromSwarm) {}

    fn on_connection_handler_event(&mut self, _: PeerId, _: ConnectionId, event: THandlerOutEvent<Self>) {
        match event {}
    }

    fn poll(&mut self, _: &mut Context<'_>) -> Poll<ToSwarm<Self::ToSwarm, THandlerInEvent<Self>>> {
        Poll::Pending
    }
}

/// What one address is counted as: an IPv4 address; an IPv6 address's
/// first 64 bits (a subscriber gets a /64 and can use every address in it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Source {
    V4(std::net::Ipv4Addr),
    V6Prefix(u64),
}

fn source_of(addr: &Multiaddr) -> Option<Source> {
    match ip_of(addr)? {
        IpAddr::V4(v4) => Some(Source::V4(v4)),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => Some(Source::V4(v4)),
            None => Some(Source::V6Prefix((u128::from(v6) >> 64) as u64)),
        },
    }
}

/// Connections per address, capped for inbound ones (see the module's docs).
pub struct AddressLimits {
    max_per_address: u32,
    counted: HashMap<ConnectionId, Source>,
    per_address: HashMap<Source, u32>,
    /// Inbound connections refused for their address, for `node status`.
    pub refused: u64,
}

impl AddressLimits {
    pub fn new(max_per_address: u32) -> Self {
        Self { max_per_address, counted: HashMap::new(), per_address: HashMap::new(), refused: 0 }
    }

    fn count(&mut self, id: ConnectionId, source: Source) {
        if self.counted.insert(id, source).is_none() {
            *self.per_address.entry(source).or_default() += 1;
        }
    }

    fn uncount(&mut self, id: ConnectionId) {
        let Some(source) = self.counted.remove(&id) else { return };
        if let Some(n) = self.per_address.get_mut(&source) {
            *n -= 1;
            if *n == 0 {
                self.per_address.remove(&source);
            }
        }
    }

    /// Connections counted for `addr`'s address.
    #[cfg(test)]
    fn connections_from(&self, addr: &Multiaddr) -> u32 {
        source_of(addr).and_then(|s| self.per_address.get(&s).copied()).unwrap_or(0)
    }
}

impl NetworkBehaviour for AddressLimits {
    type ConnectionHandler = dummy::ConnectionHandler;
    type ToSwarm = Infallible;

    fn handle_pending_inbound_connection(&mut self, id: ConnectionId, _: &Multiaddr, remote: &Multiaddr) -> Result<(), ConnectionDenied> {
        let Some(source) = source_of(remote) else { return Ok(()) };
        if self.per_address.get(&source).copied().unwrap_or(0) >= self.max_per_address {
            self.refused += 1;
            return Err(ConnectionDenied::new(format!("{} connections from this address already", self.max_per_address)));
        }
        self.count(id, source);
        Ok(())
    }

    fn handle_established_inbound_connection(&mut self, _: ConnectionId, _: PeerId, _: &Multiaddr, _: &Multiaddr) -> Result<THandler<Self>, ConnectionDenied> {
        Ok(dummy::ConnectionHandler)
    }

    fn handle_established_outbound_connection(
        &mut self,
        id: ConnectionId,
        _: PeerId,
        addr: &Multiaddr,
        _: Endpoint,
        _: PortUse,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        if let Some(source) = source_of(addr) {
            self.count(id, source);
        }
        Ok(dummy::ConnectionHandler)
    }

    fn on_swarm_event(&mut self, event: FromSwarm) {
        match event {
            FromSwarm::ConnectionClosed(ConnectionClosed { connection_id, .. })
            | FromSwarm::ListenFailure(ListenFailure { connection_id, .. })
            | FromSwarm::DialFailure(DialFailure { connection_id, .. }) => self.uncount(connection_id),
            _ => {}
        }
    }

    fn on_connection_handler_event(&mut self, _: PeerId, _: ConnectionId, event: THandlerOutEvent<Self>) {
        match event {}
    }

    fn poll(&mut self, _: &mut Context<'_>) -> Poll<ToSwarm<Self::ToSwarm, THandlerInEvent<Self>>> {
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Multiaddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_gate_lets_through_only_configured_and_local_mdns_addresses() {
        let peer = PeerId::random();
        let boot = a("/dns4/seed/tcp/7411");
        let mut gate = DialGate::new(&[a(&format!("/dns4/seed/tcp/7411/p2p/{peer}"))], false);
        let mut gate_mdns = DialGate::new(&[], true);
        let dial =
            |g: &mut DialGate, addrs: &[Multiaddr]| g.handle_pending_outbound_connection(ConnectionId::new_unchecked(1), None, addrs, Endpoint::Dialer).is_ok();
        assert!(dial(&mut gate, std::slice::from_ref(&boot)), "configured, without its /p2p/ part");
        assert!(dial(&mut gate, &[a(&format!("/dns4/seed/tcp/7411/p2p/{peer}"))]), "configured, with it");
        // What a peer lists in identify, or names in a discovery answer.
        assert!(!dial(&mut gate, &[a("/ip4/10.0.0.9/tcp/22")]));
        assert!(!dial(&mut gate, &[boot.clone(), a("/ip4/203.0.113.7/tcp/80")]), "one foreign address refuses the dial");
        assert!(!dial(&mut gate, &[]), "a dial by peer id alone");
        // mDNS on: local announcements only.
        assert!(dial(&mut gate_mdns, &[a("/ip4/192.168.1.20/tcp/7411")]));
        assert!(dial(&mut gate_mdns, &[a("/ip6/fe80::1/tcp/7411")]));
        assert!(!dial(&mut gate_mdns, &[a("/ip4/203.0.113.7/tcp/443")]), "mDNS never sends the node to the Internet");
        assert!(!dial(&mut gate_mdns, &[a("/dns4/example.com/tcp/443")]));
    }

    #[test]
    fn inbound_connections_per_address_are_capped_and_freed() {
        let mut limits = AddressLimits::new(2);
        let local = a("/ip4/127.0.0.1/tcp/7411");
        let from = |ip: &str, port: u16| a(&format!("{ip}/tcp/{port}"));
        let inbound =
            |l: &mut AddressLimits, id: usize, remote: &Multiaddr| l.handle_pending_inbound_connection(ConnectionId::new_unchecked(id), &local, remote).is_ok();
        assert!(inbound(&mut limits, 1, &from("/ip4/198.51.100.1", 1000)));
        assert!(inbound(&mut limits, 2, &from("/ip4/198.51.100.1", 1001)));
        assert!(!inbound(&mut limits, 3, &from("/ip4/198.51.100.1", 1002)), "a third from one address");
        assert!(inbound(&mut limits, 4, &from("/ip4/198.51.100.2", 1000)), "another address has its own");
        // One IPv6 /64 counts as one address.
        assert!(inbound(&mut limits, 5, &from("/ip6/2001:db8::1", 1)));
        assert!(inbound(&mut limits, 6, &from("/ip6/2001:db8::2", 1)));
        assert!(!inbound(&mut limits, 7, &from("/ip6/2001:db8::ffff:1", 1)));
        assert_eq!(limits.refused, 2);
        // The node's own dials count, never refused.
        let _ = limits.handle_established_outbound_connection(
            ConnectionId::new_unchecked(8),
            PeerId::random(),
            &from("/ip4/198.51.100.1", 7411),
            Endpoint::Dialer,
            PortUse::Reuse,
        );
        assert_eq!(limits.connections_from(&from("/ip4/198.51.100.1", 1)), 3);
        // A closed or failed connection frees its place.
        limits.uncount(ConnectionId::new_unchecked(1));
        limits.uncount(ConnectionId::new_unchecked(8));
        assert!(inbound(&mut limits, 9, &from("/ip4/198.51.100.1", 1003)));
    }
}
