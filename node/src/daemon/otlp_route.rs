//! `POST /v1/traces` (behind the token): OTLP/HTTP's trace export, read by
//! `agora-otlp` into actions and moves and recorded on the node's open store
//! by `agora_commands::traces` as one durable batch. The answer is OTLP's:
//! an `ExportTraceServiceResponse` in the request's encoding, with partial
//! success naming the spans refused (`protocol-spec/otlp.md`). With an OTLP
//! endpoint configured, each request is one of the node's own spans
//! (`telemetry.rs`), except a request made only of the node's own spans.

use super::control_state::ControlState;
use agora_commands::run::OpenStore;
use agora_commands::traces::{is_keyring_agent, record_traces};
use agora_interfaces::http_api::ApiError;
use agora_otlp::{DecodeError, Encoding, Mapping};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The route's handler.
pub async fn export(State(state): State<Arc<ControlState>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(encoding) = headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok()).filter(|e| !e.eq_ignore_ascii_case("identity")) {
        let message = format!("Content-Encoding {encoding:?} is not taken: send the request uncompressed");
        return ApiError::new("unsupported_media_type", message).rule("otlp_encoding").into_response();
    }
    let encoding = match Encoding::of_content_type(headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok())) {
        Ok(e) => e,
        Err(e) => return ApiError::new("unsupported_media_type", e.to_string()).rule("otlp_content_type").into_response(),
    };
    let started = std::time::Instant::now();
    let started_at = std::time::SystemTime::now();
    let telemetry = state.telemetry.clone();
    let answer = tokio::task::spawn_blocking(move || {
        let request = agora_otlp::decode(&body, encoding)?;
        let own = only_own_spans(&request);
        let open = OpenStore { home: &state.home, store: &state.store, graph: &state.graph, merge: &state.merge, founder: state.founder };
        let plan = agora_otlp::plan(&request, &state.otlp, &|name| is_keyring_agent(&open, name));
        Ok((record_traces(&open, plan).map_err(Failure::Store)?, own))
    })
    .await;
    let failed = |why: &str| {
        if let Some(t) = &telemetry {
            t.receiver_batch(started_at, 0, 0, Some(why));
        }
    };
    let report = match answer {
        Ok(Ok((report, own))) => {
            if let Some(t) = telemetry.as_ref().filter(|_| !own) {
                t.receiver_batch(started_at, report.recorded, report.refused.len(), None);
            }
            report
        }
        Ok(Err(Failure::Decode(DecodeError::TooLarge(n)))) => {
            failed("otlp_request_size");
            return ApiError::new("too_large", DecodeError::TooLarge(n).to_string()).rule("otlp_request_size").into_response();
        }
        Ok(Err(Failure::Decode(e))) => {
            failed("otlp_request");
            return ApiError::new("bad_request", e.to_string()).rule("otlp_request").into_response();
        }
        Ok(Err(Failure::Store(e))) => {
            failed("nothing was recorded: the store refused the batch");
            return ApiError::new("internal", format!("nothing was recorded: {e:#}")).into_response();
        }
        Err(e) => {
            failed("the export stopped unexpectedly");
            return ApiError::new("internal", format!("the export stopped unexpectedly: {e}")).into_response();
        }
    };
    tracing::debug!(recorded = report.recorded, refused = report.refused.len(), took_ms = started.elapsed().as_millis() as u64, "otlp export");
    let response = agora_otlp::response(report.refused.len() as u64, report.message());
    ([(header::CONTENT_TYPE, encoding.content_type())], agora_otlp::encode_response(&response, encoding)).into_response()
}

/// Whether every span of the request is one of this node's own (its
/// instrumentation scope): such a request is not answered with a span.
fn only_own_spans(request: &agora_otlp::ExportTraceServiceRequest) -> bool {
    let mut scopes = request.resource_spans.iter().flat_map(|r| r.scope_spans.iter()).peekable();
    scopes.peek().is_some() && scopes.all(|s| s.scope.as_ref().is_some_and(|scope| scope.name == super::telemetry::SCOPE))
}

enum Failure {
    Decode(DecodeError),
    Store(anyhow::Error),
}

impl From<DecodeError> for Failure {
    fn from(e: DecodeError) -> Self {
        Failure::Decode(e)
    }
}

/// The mapping of `[otlp]` in the node's configuration.
pub fn mapping(settings: &agora_home::config::OtlpSettings) -> Mapping {
    Mapping { agents: settings.agents.clone(), default_agent: settings.default_agent.clone(), keep_contents: settings.keep_contents }
}
