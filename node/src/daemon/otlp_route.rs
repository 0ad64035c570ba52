//! `POST /v1/traces` (behind the token): OTLP/HTTP's trace export, read by
//! `agora-otlp` into actions and moves and recorded on the node's open store
//! by `agora_commands::traces` as one durable batch. The answer is OTLP's:
//! an `ExportTraceServiceResponse` in the request's encoding, with partial
//! success naming the spans refused (`protocol-spec/otlp.md`).

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
    let answer = tokio::task::spawn_blocking(move || {
        let request = agora_otlp::decode(&body, encoding)?;
        let open = OpenStore { home: &state.home, store: &state.store, graph: &state.graph, merge: &state.merge, founder: state.founder };
        let plan = agora_otlp::plan(&request, &state.otlp, &|name| is_keyring_agent(&open, name));
        record_traces(&open, plan).map_err(Failure::Store)
    })
    .await;
    let report = match answer {
        Ok(Ok(report)) => report,
        Ok(Err(Failure::Decode(DecodeError::TooLarge(n)))) => {
            return ApiError::new("too_large", DecodeError::TooLarge(n).to_string()).rule("otlp_request_size").into_response();
        }
        Ok(Err(Failure::Decode(e))) => return ApiError::new("bad_request", e.to_string()).rule("otlp_request").into_response(),
        Ok(Err(Failure::Store(e))) => return ApiError::new("internal", format!("nothing was recorded: {e:#}")).into_response(),
        Err(e) => return ApiError::new("internal", format!("the export stopped unexpectedly: {e}")).into_response(),
    };
    tracing::debug!(recorded = report.recorded, refused = report.refused.len(), took_ms = started.elapsed().as_millis() as u64, "otlp export");
    let response = agora_otlp::response(report.refused.len() as u64, report.message());
    ([(header::CONTENT_TYPE, encoding.content_type())], agora_otlp::encode_response(&response, encoding)).into_response()
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
