//! The live graph page: three static files embedded in the binary
//! (`crates/agora-interfaces/ui/`: no build step, no library) served under
//! a base path the caller chooses, which read the JSON API and
//! `/v1/events` (the stream that tells an open page the log changed:
//! server-sent events, so it redraws within a second) under the same base,
//! with relative URLs; and the login page at `/`.
//!
//! The files hold nothing secret and are served to anyone. The page never
//! holds the control token: its requests carry what the browser attaches
//! for the base path (the node's page session, a cookie the caller sets and
//! checks), so the page works wherever it is mounted. The login page takes
//! a one-time code from its URL's fragment (which a browser never sends to
//! a server) and posts it to `/v1/page/session`.

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const INDEX_HTML: &str = include_str!("../ui/index.html");
const LOGIN_HTML: &str = include_str!("../ui/login.html");
const APP_JS: &str = include_str!("../ui/app.js");
const APP_CSS: &str = include_str!("../ui/app.css");

/// How often an open stream looks for a change: well within the second
/// the page promises.
const POLL: Duration = Duration::from_millis(200);
/// A comment line this often keeps proxies and the browser from closing an
/// idle stream.
const KEEP_ALIVE_POLLS: u32 = 75;

/// A static file. No referrer leaves the page: its base path is the
/// caller's to keep from other servers.
fn file(content_type: &'static str, body: &'static str) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache"), (header::REFERRER_POLICY, "no-referrer")], body)
        .into_response()
}

/// `<base>/`, `<base>/ui/app.js`, `<base>/ui/app.css`, and `<base>` sent on
/// to `<base>/` (the page's URLs are relative to it).
pub fn page_files(base: &str) -> Router {
    let index = format!("{base}/");
    Router::new()
        .route(&index, get(|| async { file("text/html; charset=utf-8", INDEX_HTML) }))
        .route(&format!("{base}/ui/app.js"), get(|| async { file("text/javascript; charset=utf-8", APP_JS) }))
        .route(&format!("{base}/ui/app.css"), get(|| async { file("text/css; charset=utf-8", APP_CSS) }))
        .route(base, get(move || std::future::ready((StatusCode::PERMANENT_REDIRECT, [(header::LOCATION, index.clone())]).into_response())))
}

/// `/`: the login page, which posts the code in its URL's fragment
/// (`#code=...`) to `/v1/page/session`, or says how to get one.
pub fn login_page() -> Router {
    Router::new().route("/", get(|| async { file("text/html; charset=utf-8", LOGIN_HTML) }))
}

/// What tells an open page the log changed.
#[derive(Clone)]
pub struct Changes {
    /// Counts committed writes (the node's store observer adds to it).
    pub generation: Arc<AtomicU64>,
    /// Cancelled when the node stops: open streams end.
    pub end: CancellationToken,
}

/// `<base>/v1/events`, to be put behind the token or the page's session
/// by the caller.
pub fn events(changes: Changes, base: &str) -> Router {
    Router::new().route(&format!("{base}/v1/events"), get(stream).layer(DefaultBodyLimit::max(0))).with_state(changes)
}

/// `GET /v1/events`: `event: change` with the write generation whenever a
/// write was committed since the last look, a comment now and then to keep
/// the stream open, and the end when the node stops.
async fn stream(State(changes): State<Changes>) -> Response {
    let generation = changes.generation;
    let end = changes.end;
    let first = generation.load(Ordering::Acquire);
    let hello = futures::stream::once(async move { Ok::<_, Infallible>(format!("event: hello\ndata: {first}\n\n")) });
    let changes = futures::stream::unfold((first, 0u32), move |(last, idle)| {
        let (generation, end) = (generation.clone(), end.clone());
        async move {
            let mut idle = idle;
            loop {
                tokio::select! {
                    _ = end.cancelled() => return None,
                    _ = tokio::time::sleep(POLL) => {}
                }
                let now = generation.load(Ordering::Acquire);
                if now != last {
                    return Some((Ok(format!("event: change\ndata: {now}\n\n")), (now, 0)));
                }
                idle += 1;
                if idle >= KEEP_ALIVE_POLLS {
                    return Some((Ok(": keep-alive\n\n".to_string()), (last, 0)));
                }
            }
        }
    });
    let body = Body::from_stream(futures::StreamExt::chain(hello, changes));
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}
