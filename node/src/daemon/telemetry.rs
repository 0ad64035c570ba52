//! The node's own spans (issue 40, item 5): when an OTLP endpoint is
//! configured, every operation run for the JSON API and MCP
//! ([`super::server::NodeBackend`]) and every batch the OTLP receiver records
//! is one span following OpenTelemetry's GenAI conventions for memory
//! operations, exported over OTLP/HTTP (protobuf) by the SDK's batch span
//! processor on its own thread. The mapping is in protocol-spec/otlp.md
//! ("The node's own spans"); no span carries an event's text, an input or an
//! answer, only names, ids and counts.
//!
//! The endpoint, first found: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the
//! whole URL) or `OTEL_EXPORTER_OTLP_ENDPOINT` (a base, `/v1/traces` added),
//! read by the SDK itself, as are `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_BSP_*`, `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES`; else `[otlp] export` of agora.toml (a base
//! like `OTEL_EXPORTER_OTLP_ENDPOINT`, or a URL ending in `/v1/traces`).
//! None, or `OTEL_SDK_DISABLED=true`: no exporter, no thread, and an
//! operation costs one branch.

use agora_commands::ops::{Effect, OpError, Operation};
use anyhow::{Context, Result, bail};
use opentelemetry::trace::{Span, SpanKind, Status, Tracer, TracerProvider};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::time::{Duration, SystemTime};

/// The instrumentation scope of the node's spans. The receiver records no
/// span for a request made only of these (a node exporting to its own
/// `/v1/traces` would otherwise answer each export with another).
pub const SCOPE: &str = "agora-node";
/// `gen_ai.provider.name` of every span.
pub const PROVIDER: &str = "agora";
/// `agora.operation` of the receiver's spans.
pub const RECEIVER_OPERATION: &str = "otlp_export";
/// Longest status message kept from an error, in bytes.
const ERROR_MESSAGE_MAX: usize = 1024;

/// Where the spans go: the SDK's environment, else `[otlp] export`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`,
    /// resolved by the SDK.
    Environment,
    /// The traces URL made from `[otlp] export`.
    Configured(String),
}

/// The endpoint, if spans are to be exported at all.
pub fn endpoint(export: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Endpoint>> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    if set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some() || set("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() {
        return Ok(Some(Endpoint::Environment));
    }
    let Some(base) = export.map(str::trim).filter(|e| !e.is_empty()) else { return Ok(None) };
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        bail!("[otlp] export = {base:?}: an http:// or https:// URL, e.g. \"http://collector:4318\"");
    }
    let base = base.trim_end_matches('/');
    let url = if base.ends_with("/v1/traces") { base.to_string() } else { format!("{base}/v1/traces") };
    Ok(Some(Endpoint::Configured(url)))
}

/// The workspace the spans name as their memory store.
#[derive(Debug, Clone)]
pub struct Store {
    /// `gen_ai.memory.store.id`: the workspace id (founder and name hashed).
    pub id: String,
    /// `gen_ai.memory.store.name` and the spans' names: the workspace's name.
    pub name: String,
}

/// The exporter and the tracer over it.
pub struct Telemetry {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    store: Store,
}

/// The telemetry of `[otlp] export` and the environment, or `None` when no
/// endpoint is set.
pub fn start(export: Option<&str>, store: Store) -> Result<Option<Telemetry>> {
    let Some(endpoint) = endpoint(export, &|name| std::env::var(name).ok())? else { return Ok(None) };
    let builder = SpanExporter::builder().with_http();
    let (builder, shown) = match &endpoint {
        Endpoint::Environment => (builder, "the OTEL_EXPORTER_OTLP_* environment".to_string()),
        Endpoint::Configured(url) => (builder.with_endpoint(url.clone()), url.clone()),
    };
    let exporter = builder.build().with_context(|| format!("the OTLP span exporter to {shown}"))?;
    let mut resource = Resource::builder();
    let named_by_env = std::env::var_os("OTEL_SERVICE_NAME").is_some()
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|a| a.split(',').any(|kv| kv.trim_start().starts_with("service.name=")));
    if !named_by_env {
        resource = resource.with_service_name("agora");
    }
    let resource = resource.with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))).build();
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
    let tracer = provider.tracer_with_scope(InstrumentationScope::builder(SCOPE).with_version(env!("CARGO_PKG_VERSION")).build());
    tracing::info!(endpoint = %shown, "exporting the node's spans over OTLP/HTTP");
    Ok(Some(Telemetry { provider, tracer, store }))
}

/// `gen_ai.operation.name` of an operation, by its effect: appending an event
/// or storing a peer's is `create_memory` (nothing is ever overwritten), a
/// redaction `delete_memory`, any read `search_memory`.
pub fn memory_operation(effect: Effect) -> &'static str {
    match effect {
        Effect::Append | Effect::AppendFinal | Effect::Store => "create_memory",
        Effect::Delete => "delete_memory",
        Effect::Read => "search_memory",
    }
}

impl Telemetry {
    fn attributes(&self, memory_operation: &'static str, operation: &'static str) -> Vec<KeyValue> {
        vec![
            KeyValue::new("gen_ai.operation.name", memory_operation),
            KeyValue::new("gen_ai.provider.name", PROVIDER),
            KeyValue::new("gen_ai.memory.store.id", self.store.id.clone()),
            KeyValue::new("gen_ai.memory.store.name", self.store.name.clone()),
            KeyValue::new("agora.operation", operation),
        ]
    }

    /// One operation of the API or MCP, run by `agent` (`None`: the home's
    /// own, `self`) from `started` until now, with its answer or error.
    pub fn operation(&self, op: &Operation, agent: Option<&str>, started: SystemTime, result: &Result<serde_json::Value, OpError>) {
        let memory_operation = memory_operation(op.effect);
        let mut attributes = self.attributes(memory_operation, op.name);
        attributes.push(KeyValue::new("gen_ai.agent.name", agent.unwrap_or(agora_home::home::OWN_AGENT).to_string()));
        let status = match result {
            Ok(answer) => {
                // The entry recorded (a write's answer names it); reads name none.
                if memory_operation != "search_memory"
                    && let Some(id) = answer.get("id").and_then(|v| v.as_str())
                {
                    attributes.push(KeyValue::new("gen_ai.memory.id", id.to_string()));
                }
                Status::Unset
            }
            Err(e) => {
                attributes.push(KeyValue::new("error.type", e.rule.clone().or_else(|| e.code.clone()).unwrap_or_else(|| "_OTHER".to_string())));
                if let Some(entry) = &e.entry {
                    attributes.push(KeyValue::new("agora.error.entry", entry.clone()));
                }
                Status::error(error_message(e))
            }
        };
        self.span(memory_operation, started, attributes, status);
    }

    /// One request of the OTLP receiver: the actions and moves it recorded
    /// and the spans it refused; `failed`: nothing was recorded, and why.
    pub fn receiver_batch(&self, started: SystemTime, recorded: usize, refused: usize, failed: Option<&str>) {
        let mut attributes = self.attributes("create_memory", RECEIVER_OPERATION);
        attributes.push(KeyValue::new("agora.otlp.recorded", recorded as i64));
        attributes.push(KeyValue::new("agora.otlp.refused", refused as i64));
        let status = match failed {
            Some(why) => {
                attributes.push(KeyValue::new("error.type", "otlp_export"));
                Status::error(cut(why, ERROR_MESSAGE_MAX))
            }
            None => Status::Unset,
        };
        self.span("create_memory", started, attributes, status);
    }

    fn span(&self, memory_operation: &str, started: SystemTime, attributes: Vec<KeyValue>, status: Status) {
        // The node serves the operation for a client: SERVER, as the
        // conventions' spans of a remote memory store seen from its side.
        let mut span = self
            .tracer
            .span_builder(format!("{memory_operation} {}", self.store.name))
            .with_kind(SpanKind::Server)
            .with_start_time(started)
            .with_attributes(attributes)
            .start(&self.tracer);
        span.set_status(status);
        span.end();
    }

    /// Export what is queued and stop, within `bound`: the node stops on
    /// time whether or not the collector answers.
    pub fn shutdown(&self, bound: Duration) {
        if let Err(e) = self.provider.shutdown_with_timeout(bound) {
            tracing::warn!("the OTLP span exporter did not finish: {e}");
        }
    }
}

/// An error's status message: its rule, then what the command line says.
fn error_message(e: &OpError) -> String {
    let message = match &e.rule {
        Some(rule) => format!("{rule}: {}", e.message),
        None => e.message.clone(),
    };
    cut(&message, ERROR_MESSAGE_MAX)
}

fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_endpoint_comes_from_the_environment_then_the_file() {
        let none = env_of(&[]);
        assert_eq!(endpoint(None, &none).unwrap(), None);
        assert_eq!(endpoint(Some(""), &none).unwrap(), None);
        assert_eq!(endpoint(Some("http://c:4318"), &none).unwrap(), Some(Endpoint::Configured("http://c:4318/v1/traces".into())));
        assert_eq!(endpoint(Some("http://c:4318/"), &none).unwrap(), Some(Endpoint::Configured("http://c:4318/v1/traces".into())));
        assert_eq!(endpoint(Some("https://c/v1/traces"), &none).unwrap(), Some(Endpoint::Configured("https://c/v1/traces".into())));
        assert!(endpoint(Some("c:4318"), &none).is_err());
        let general = env_of(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")]);
        assert_eq!(endpoint(Some("http://c:4318"), &general).unwrap(), Some(Endpoint::Environment));
        let traces = env_of(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://env:4318/v1/traces")]);
        assert_eq!(endpoint(None, &traces).unwrap(), Some(Endpoint::Environment));
        let disabled = env_of(&[("OTEL_SDK_DISABLED", "true"), ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")]);
        assert_eq!(endpoint(Some("http://c:4318"), &disabled).unwrap(), None);
        let blank = env_of(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]);
        assert_eq!(endpoint(None, &blank).unwrap(), None);
    }

    #[test]
    fn effects_map_to_memory_operations() {
        assert_eq!(memory_operation(Effect::Append), "create_memory");
        assert_eq!(memory_operation(Effect::AppendFinal), "create_memory");
        assert_eq!(memory_operation(Effect::Store), "create_memory");
        assert_eq!(memory_operation(Effect::Delete), "delete_memory");
        assert_eq!(memory_operation(Effect::Read), "search_memory");
    }

    #[test]
    fn error_messages_are_cut_on_a_character() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("abc", 10), "abc");
    }
}
