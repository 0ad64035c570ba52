//! The `openai` classifier: one request to an OpenAI-compatible chat
//! completions endpoint (llama.cpp's server, vLLM, Ollama, LM Studio, a
//! hosted API behind a plain-HTTP gateway), asking for a JSON object, whose
//! answer is read strictly ([`super::classify::parse_answer`]).

use super::classify::{ClassifyError, Proposal, SYSTEM_PROMPT, parse_answer, user_message};
use serde_json::{Value, json};
use std::time::Duration;

/// Longest answer read from the endpoint.
const ANSWER_BYTES_MAX: u64 = 4 << 20;
/// How long one request may take, model time included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The chat completions URL of `endpoint`: itself when it ends in
/// `/chat/completions`, else that path added to it.
pub fn completions_url(endpoint: &str) -> String {
    let e = endpoint.trim().trim_end_matches('/');
    if e.ends_with("/chat/completions") { e.to_string() } else { format!("{e}/chat/completions") }
}

/// Ask `endpoint`'s `model` for the proposals of `text`: the proposals and
/// the model that answered (as the endpoint names it).
pub fn classify(endpoint: &str, model: &str, api_key: Option<&str>, text: &str) -> Result<(Vec<Proposal>, String, String), ClassifyError> {
    let url = completions_url(endpoint);
    if !url.starts_with("http://") {
        return Err(ClassifyError::Settings(format!(
            "classifier endpoint {url}: only http:// URLs are spoken (this build's HTTP client has no TLS); put a local gateway in front of an https endpoint"
        )));
    }
    let body = json!({
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user_message(text)},
        ],
        "response_format": {"type": "json_object"},
        "temperature": 0,
    });
    let agent = ureq::Agent::config_builder()
        .proxy(None)
        .timeout_connect(Some(Duration::from_secs(5)))
        .timeout_global(Some(REQUEST_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .new_agent();
    let mut request = agent.post(&url).header("content-type", "application/json");
    if let Some(key) = api_key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let mut response = request.send(body.to_string().as_bytes()).map_err(|e| ClassifyError::Unreachable { endpoint: url.clone(), reason: e.to_string() })?;
    let status = response.status().as_u16();
    let answer = response
        .body_mut()
        .with_config()
        .limit(ANSWER_BYTES_MAX)
        .read_to_string()
        .map_err(|e| ClassifyError::Unreachable { endpoint: url.clone(), reason: format!("reading the answer: {e}") })?;
    if status != 200 {
        let excerpt: String = answer.trim().chars().take(300).collect();
        return Err(ClassifyError::Status { endpoint: url, status, body: excerpt });
    }
    let source = format!("the endpoint {url}");
    let malformed = |reason: String| ClassifyError::Malformed { source_name: source.clone(), reason };
    let v: Value = serde_json::from_str(&answer).map_err(|e| malformed(format!("not a chat completion (JSON): {e}")))?;
    let content =
        v.pointer("/choices/0/message/content").and_then(Value::as_str).ok_or_else(|| malformed("no choices[0].message.content string".to_string()))?;
    let answered_by = v.get("model").and_then(Value::as_str).filter(|m| !m.is_empty()).unwrap_or(model).to_string();
    Ok((parse_answer(content, &source)?, answered_by, content.to_string()))
}
