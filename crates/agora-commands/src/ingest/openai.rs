//! The `openai` classifier: one request to an OpenAI-compatible chat
//! completions endpoint (llama.cpp's server, vLLM, Ollama, LM Studio, a
//! hosted API), over `http://` or `https://`, asking for a JSON object,
//! whose answer is read strictly ([`super::classify::parse_answer`]).
//!
//! TLS is rustls over ring. An `https://` endpoint's certificate must chain
//! to one of the platform's root certificates (rustls-native-certs: the
//! system's bundle, or the file `SSL_CERT_FILE` names; the same store the
//! platform verifier reads on Linux) or to a CA of `[ingest] ca_file`.

use super::classify::{ClassifyError, Proposal, SYSTEM_PROMPT, parse_answer, user_message};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig, TlsProvider};

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

/// The platform's root certificates, loaded once per process (a few
/// hundred files or one bundle); the ones that do not parse are left out.
fn platform_roots() -> &'static [Certificate<'static>] {
    static ROOTS: OnceLock<Vec<Certificate<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| rustls_native_certs::load_native_certs().certs.iter().map(|c| Certificate::from_der(c.as_ref()).to_owned()).collect())
}

/// The CA certificates of the PEM file `ca_file` (`[ingest] ca_file`).
fn extra_roots(ca_file: &Path) -> Result<Vec<Certificate<'static>>, ClassifyError> {
    let unusable = |reason: String| ClassifyError::Settings(format!("[ingest] ca_file {}: {reason}", ca_file.display()));
    let pem = std::fs::read(ca_file).map_err(|e| unusable(e.to_string()))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item.map_err(|e| unusable(format!("not PEM: {e}")))? {
            PemItem::Certificate(c) => certs.push(c),
            _ => continue,
        }
    }
    if certs.is_empty() {
        return Err(unusable("holds no PEM certificate".to_string()));
    }
    Ok(certs)
}

/// How one request is made: TLS trusting the platform's roots and those of
/// `ca_file`, no proxy, bounded times, error statuses read as answers.
fn agent(ca_file: Option<&Path>) -> Result<(ureq::Agent, String), ClassifyError> {
    let mut roots = platform_roots().to_vec();
    let mut trusted = format!("the platform's {} root certificates", roots.len());
    if let Some(file) = ca_file {
        let extra = extra_roots(file)?;
        trusted.push_str(&format!(" and the {} of [ingest] ca_file {}", extra.len(), file.display()));
        roots.extend(extra);
    }
    let tls = TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(RootCerts::from(roots))
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .build();
    let agent = ureq::Agent::config_builder()
        .proxy(None)
        .tls_config(tls)
        .timeout_connect(Some(Duration::from_secs(5)))
        .timeout_global(Some(REQUEST_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .new_agent();
    Ok((agent, trusted))
}

/// The error of a TLS handshake that failed on the server's certificate
/// (rustls's, as it is or carried by the transport's I/O error).
fn untrusted(e: &ureq::Error) -> Option<&rustls::Error> {
    let tls = match e {
        ureq::Error::Rustls(e) => Some(e),
        ureq::Error::Io(e) => e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()),
        _ => None,
    };
    tls.filter(|e| matches!(e, rustls::Error::InvalidCertificate(_)))
}

/// Ask `endpoint`'s `model` for the proposals of `text`: the proposals and
/// the model that answered (as the endpoint names it). An `https://`
/// endpoint may also chain to a CA of `ca_file`.
pub fn classify(
    endpoint: &str,
    model: &str,
    api_key: Option<&str>,
    ca_file: Option<&Path>,
    text: &str,
) -> Result<(Vec<Proposal>, String, String), ClassifyError> {
    let url = completions_url(endpoint);
    if !url.starts_with("http://") && !url.starts_with("https://") {
        return Err(ClassifyError::Settings(format!("classifier endpoint {url}: not an http:// or https:// URL")));
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
    let (agent, trusted) = agent(ca_file)?;
    let mut request = agent.post(&url).header("content-type", "application/json");
    if let Some(key) = api_key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let mut response = request.send(body.to_string().as_bytes()).map_err(|e| match untrusted(&e) {
        Some(reason) => ClassifyError::Untrusted { endpoint: url.clone(), reason: reason.to_string(), trusted },
        None => ClassifyError::Unreachable { endpoint: url.clone(), reason: e.to_string() },
    })?;
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
