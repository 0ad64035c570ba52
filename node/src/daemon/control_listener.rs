//! The control channel's listener: HTTP/1.1 on 127.0.0.1, served by hyper
//! with bounds on what a connection may cost before it proves anything.
//!
//! Every local process can open connections to the control port, token or
//! not. Three bounds keep that from costing the node its memory, its file
//! descriptors or its answers to its own command line:
//!
//! - **header-read timeout** ([`HEADER_READ_TIMEOUT`]): a request's headers
//!   arrive whole within it, and an idle kept-alive connection's next request
//!   starts within it, or the connection is closed (hyper's timer runs from
//!   the moment it waits for a request head, on a fresh connection and
//!   between two requests alike);
//! - **read buffer** ([`READ_BUFFER_BYTES_MAX`]): what hyper buffers of a
//!   connection's input, so a half-sent request holds at most this;
//! - **connection cap** (`control_connections_max` in `agora.toml`, default
//!   `agora_home::config::CONTROL_CONNECTIONS_DEFAULT`): at the cap, a new connection closes the
//!   oldest one that is not serving an authorised request (idle, half-sent,
//!   or an unauthenticated request). A connection serving an authorised
//!   request (the bearer token, or the page's session) is never closed for
//!   room, until its answer has been sent; when every connection is one, the
//!   new connection is refused. So a flood of connections from a process
//!   without the token costs at most the cap in descriptors and buffers, and
//!   displaces only itself: a command line's connection, newer than the
//!   flood's, sends its request at once and is then never displaced.
//!
//! WebSockets leave the count once upgraded; the automerge-repo server caps
//! them on its own (64).
//!
//! Every error answer the router gives, whichever route (or none) gave it,
//! leaves in the one error shape (`agora_interfaces::http_api::json_errors`):
//! an unknown path is a JSON 404, a wrong method a JSON 405 with `Allow`, a
//! body over a route's limit a JSON 413.

use agora_interfaces::http_api;
use axum::Router;
use axum::body::Body;
use axum::http::Request;
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// A request's headers, and an idle connection's next request, arrive
/// within this. Every client of the control channel (the command line, a
/// browser, an MCP client) sends a request's headers at once; a loaded
/// machine still sends them within milliseconds.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// What hyper buffers of one connection's input. A request's headers (the
/// longest: a page's cookie and a bearer token) are well under 8 KiB;
/// bodies are streamed through this buffer, so it bounds only what waits.
pub const READ_BUFFER_BYTES_MAX: usize = 64 << 10;
/// Headers a request may carry.
pub const HEADERS_MAX: usize = 64;
/// After a failed accept (descriptors exhausted, say), wait this long
/// before the next, so the loop does not spin.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// The listener's bounds.
#[derive(Clone, Copy, Debug)]
pub struct ControlLimits {
    pub connections_max: usize,
    pub header_read_timeout: Duration,
    pub read_buffer_bytes_max: usize,
}

impl ControlLimits {
    pub fn with_connections_max(connections_max: usize) -> Self {
        Self { connections_max, header_read_timeout: HEADER_READ_TIMEOUT, read_buffer_bytes_max: READ_BUFFER_BYTES_MAX }
    }
}

/// One connection as the route layers see it (an extension of each of its
/// requests): an authorised request marks it while it is served.
#[derive(Clone, Default)]
pub struct ConnectionSlot {
    authorised_in_flight: Arc<AtomicUsize>,
}

impl ConnectionSlot {
    /// Mark the connection as serving an authorised request until the guard
    /// is dropped: it is not closed for room meanwhile.
    pub fn authorised(&self) -> AuthorisedGuard {
        self.authorised_in_flight.fetch_add(1, Ordering::AcqRel);
        AuthorisedGuard(self.authorised_in_flight.clone())
    }

    fn serving_authorised(&self) -> bool {
        self.authorised_in_flight.load(Ordering::Acquire) > 0
    }
}

/// Held while an authorised request is served (see [`hold_until_sent`]).
pub struct AuthorisedGuard(Arc<AtomicUsize>);

impl Drop for AuthorisedGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Keep `guard` until `response`'s body is sent: an answer already in
/// memory is written at once, a streamed one (a command's frames, an event
/// stream) may last long, and its connection stays marked until it ends.
pub fn hold_until_sent(response: Response, guard: AuthorisedGuard) -> Response {
    use axum::body::HttpBody as _;
    if response.body().size_hint().exact().is_some() {
        return response;
    }
    let (parts, body) = response.into_parts();
    let stream = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
        let _held = &guard;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// What the listener has done, for `agora node status`.
#[derive(Default)]
pub struct ControlCounters {
    pub open: AtomicUsize,
    pub accepted: AtomicU64,
    /// Closed to make room for a newer connection.
    pub displaced: AtomicU64,
    /// Refused: every open connection was serving an authorised request.
    pub refused: AtomicU64,
}

impl ControlCounters {
    pub fn snapshot(&self, limits: &ControlLimits) -> serde_json::Value {
        serde_json::json!({
            "open": self.open.load(Ordering::Relaxed),
            "max": limits.connections_max,
            "accepted": self.accepted.load(Ordering::Relaxed),
            "displaced": self.displaced.load(Ordering::Relaxed),
            "refused": self.refused.load(Ordering::Relaxed),
            "header_read_timeout_ms": limits.header_read_timeout.as_millis() as u64,
        })
    }
}

/// The open connections, oldest first (ids are given in accept order).
#[derive(Default)]
struct Table {
    next: u64,
    open: BTreeMap<u64, (ConnectionSlot, CancellationToken)>,
}

impl Table {
    /// Room for one more connection: the oldest one not serving an
    /// authorised request is closed when the table is full. `None` when
    /// every open connection serves one.
    fn admit(&mut self, max: usize, counters: &ControlCounters) -> Option<(u64, ConnectionSlot, CancellationToken)> {
        if self.open.len() >= max {
            let oldest_idle = self.open.iter().find(|(_, (slot, _))| !slot.serving_authorised()).map(|(id, _)| *id);
            match oldest_idle.and_then(|id| self.open.remove(&id)) {
                Some((_, close)) => {
                    close.cancel();
                    counters.displaced.fetch_add(1, Ordering::Relaxed);
                }
                None => {
                    counters.refused.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
            }
        }
        let id = self.next;
        self.next += 1;
        let (slot, close) = (ConnectionSlot::default(), CancellationToken::new());
        self.open.insert(id, (slot.clone(), close.clone()));
        counters.open.store(self.open.len(), Ordering::Relaxed);
        Some((id, slot, close))
    }

    fn remove(&mut self, id: u64, counters: &ControlCounters) {
        self.open.remove(&id);
        counters.open.store(self.open.len(), Ordering::Relaxed);
    }
}

fn lock(table: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    table.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serve `router` on `listener` until `stop` is cancelled; then stop
/// accepting, let each connection finish its request in flight, and return
/// once all have ended (the caller bounds the wait).
pub async fn serve(listener: TcpListener, router: Router, limits: ControlLimits, counters: Arc<ControlCounters>, stop: CancellationToken) {
    let router = router.fallback(http_api::unknown_route).layer(axum::middleware::from_fn(http_api::json_errors));
    let table = Arc::new(Mutex::new(Table::default()));
    let mut connections = JoinSet::new();
    loop {
        let tcp = tokio::select! {
            _ = stop.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    tracing::warn!(error = %e, "the control channel could not accept a connection");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            },
        };
        counters.accepted.fetch_add(1, Ordering::Relaxed);
        let Some((id, slot, close)) = lock(&table).admit(limits.connections_max, &counters) else {
            drop(tcp);
            continue;
        };
        // No Nagle delay: an answer written in pieces (a server-sent event
        // stream, the MCP endpoint's) would otherwise wait for the client's
        // delayed ACK, 40 ms a call.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY on a control connection");
        }
        let (router, table, counters, stop) = (router.clone(), table.clone(), counters.clone(), stop.clone());
        connections.spawn(async move {
            serve_connection(tcp, router, slot, &limits, close, stop).await;
            lock(&table).remove(id, &counters);
        });
    }
    while connections.join_next().await.is_some() {}
}

async fn serve_connection(
    tcp: tokio::net::TcpStream,
    router: Router,
    slot: ConnectionSlot,
    limits: &ControlLimits,
    close: CancellationToken,
    stop: CancellationToken,
) {
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(slot.clone());
        router.clone().oneshot(request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout).max_buf_size(limits.read_buffer_bytes_max).max_headers(HEADERS_MAX);
    let connection = builder.serve_connection(TokioIo::new(tcp), service).with_upgrades();
    tokio::pin!(connection);
    tokio::select! {
        ended = connection.as_mut() => {
            if let Err(e) = ended {
                tracing::debug!(error = %e, "control connection ended");
            }
            return;
        }
        // Displaced: dropping the connection closes the socket.
        _ = close.cancelled() => return,
        _ = stop.cancelled() => connection.as_mut().graceful_shutdown(),
    }
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = close.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_displaces_its_oldest_idle_connection_and_never_an_authorised_one() {
        let counters = ControlCounters::default();
        let mut table = Table::default();
        let admitted: Vec<_> = (0..3).map(|_| table.admit(3, &counters).expect("room")).collect();
        // The oldest serves an authorised request: the next oldest goes.
        let _serving = admitted[0].1.authorised();
        let (_, _, _) = table.admit(3, &counters).expect("room made");
        assert!(!admitted[0].2.is_cancelled(), "an authorised request's connection stays");
        assert!(admitted[1].2.is_cancelled(), "the oldest idle one is closed");
        assert_eq!(table.open.len(), 3);
        assert_eq!(counters.displaced.load(Ordering::Relaxed), 1);
        // Every connection serving one: a new connection is refused.
        let guards: Vec<_> = table.open.values().map(|(slot, _)| slot.authorised()).collect();
        assert!(table.admit(3, &counters).is_none());
        assert_eq!(counters.refused.load(Ordering::Relaxed), 1);
        drop(guards);
        assert!(table.admit(3, &counters).is_some(), "room again once their answers are sent");
    }
}
