//! The OTLP receiver (`./scripts/bench.sh node otlp --spans 50000 --batch
//! 512 --clients 4 --agents 8`): exporters sending GenAI spans at once to a
//! node's `POST /v1/traces` (protobuf, as OpenTelemetry's SDKs send them),
//! each span a signed, durable `action` in the chain of the agent it names.
//!
//! Figures: spans recorded per second over the whole run, and each
//! request's latency p50 / p99 / max. The limit measured in the same run:
//! the store alone signing and durably appending the same events in the
//! same batches (`Store::append_chains` on a fresh store in this process,
//! no HTTP, no decoding, no rules), so the receiver's figure is given as its
//! share of what the disk and signatures allow. Every chain is then checked
//! to hold its spans.

use super::harness::{agora_json, new_home, start};
use agora_core::AgentKey;
use agora_graph::Event;
use anyhow::{Context, Result, bail};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use std::path::Path;
use std::time::{Duration, Instant};

pub fn run(agora: &Path, spans: usize, batch: usize, clients: usize, agents: usize, offered: usize) -> Result<()> {
    if spans == 0 || batch == 0 || clients == 0 || agents == 0 {
        bail!("--spans, --batch, --clients and --agents must be at least 1");
    }
    let requests_per_client = spans.div_ceil(batch * clients);
    let spans = requests_per_client * batch * clients;
    let limit = store_limit(spans, batch, agents)?;

    let home = new_home(agora)?;
    let names: Vec<String> = (0..agents).map(|i| format!("agent{i:02}")).collect();
    let mut ids = Vec::with_capacity(agents);
    for name in &names {
        ids.push(agora_json(agora, &home.path, &["agent", "new", name])?["id"].as_str().context("agent new printed no id")?.to_string());
    }
    let node = start(agora, &home, &home.agent, &[])?;
    let (url, token) = (node.control.url.clone(), node.control.token.clone());

    // On a schedule, each exporter sends a request every `interval`, the
    // exporters evenly staggered.
    let interval = (offered > 0).then(|| Duration::from_secs_f64((batch * clients) as f64 / offered as f64));
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let (url, token, names) = (url.clone(), token.clone(), names.clone());
            let schedule = interval.map(|every| (started + every.mul_f64(c as f64 / clients as f64), every));
            std::thread::spawn(move || exporting(&url, &token, &names, c, requests_per_client, batch, schedule))
        })
        .collect();
    let mut latencies_ms = Vec::new();
    for t in threads {
        latencies_ms.extend(t.join().map_err(|_| anyhow::anyhow!("a client's thread panicked"))??);
    }
    let elapsed = started.elapsed();
    latencies_ms.sort_by(f64::total_cmp);
    let rate = spans as f64 / elapsed.as_secs_f64();

    let status = node.control.status()?;
    let held: u64 = ids
        .iter()
        .map(|id| status["frontier"].as_array().into_iter().flatten().find(|f| f["author"] == id.as_str()).and_then(|f| f["max_seq"].as_u64()).unwrap_or(0))
        .sum();
    if held != spans as u64 {
        bail!("the agents' chains hold {held} entries, not the {spans} spans sent");
    }
    drop(node);

    let pct = |p: f64| latencies_ms[((latencies_ms.len() as f64 - 1.0) * p).round() as usize];
    let offered = if offered > 0 { format!("offered {offered} spans/s on a schedule") } else { "each as fast as it is answered".into() };
    println!(
        "otlp: {spans} GenAI spans of {agents} agents, {clients} exporters at once ({offered}), {batch} spans a request (protobuf), each span a signed durable action"
    );
    println!("{:<44} {:>10} {:>8} {:>8} {:>8}", "", "spans/s", "p50 ms", "p99 ms", "max ms");
    println!("{:<44} {:>10.0}", "store alone, same events and batches (limit)", limit);
    println!("{:<44} {:>10.0} {:>8.2} {:>8.2} {:>8.2}", "POST /v1/traces", rate, pct(0.5), pct(0.99), pct(1.0));
    println!("receiver: {:.2} of the store's limit; {} requests", rate / limit, latencies_ms.len());
    Ok(())
}

/// Requests of `batch` spans each, one after another on one connection,
/// each sent when the last is answered, or, with a `schedule` (first, then
/// every), when due; each request's latency in ms, from when it was sent
/// or, on a schedule, from when it was due (a receiver that falls behind
/// is charged for the wait).
fn exporting(
    url: &str,
    token: &str,
    names: &[String],
    client: usize,
    requests: usize,
    batch: usize,
    schedule: Option<(Instant, Duration)>,
) -> Result<Vec<f64>> {
    let http = ureq::Agent::config_builder().proxy(None).http_status_as_error(false).timeout_global(Some(Duration::from_secs(120))).build().new_agent();
    let mut latencies = Vec::with_capacity(requests);
    for r in 0..requests {
        let body = request(names, client, r, batch).encode_to_vec();
        let t0 = match schedule {
            Some((first, every)) => {
                let due = first + every.mul_f64(r as f64);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
                due
            }
            None => Instant::now(),
        };
        let mut res = http
            .post(format!("{url}/v1/traces"))
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/x-protobuf")
            .send(&body[..])?;
        let status = res.status().as_u16();
        let answer = res.body_mut().read_to_vec()?;
        latencies.push(t0.elapsed().as_secs_f64() * 1000.0);
        let response = opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse::decode(answer.as_slice());
        match (status, response) {
            (200, Ok(r)) if r.partial_success.as_ref().is_none_or(|p| p.rejected_spans == 0) => {}
            (status, answer) => bail!("client {client} request {r}: {status} {answer:?}"),
        }
    }
    Ok(latencies)
}

fn text(key: &str, value: String) -> KeyValue {
    KeyValue { key: key.into(), value: Some(AnyValue { value: Some(any_value::Value::StringValue(value)) }), ..KeyValue::default() }
}

/// One trace per request: an agent run per agent, its tool calls under it.
fn request(names: &[String], client: usize, r: usize, batch: usize) -> ExportTraceServiceRequest {
    let mut trace_id = [0u8; 16];
    trace_id[..8].copy_from_slice(&(client as u64 + 1).to_be_bytes());
    trace_id[8..].copy_from_slice(&(r as u64 + 1).to_be_bytes());
    let spans = (0..batch)
        .map(|i| {
            let agent = &names[i % names.len()];
            let run_id = (i % names.len()) as u64 + 1;
            let (parent, attributes) = if i < names.len() {
                (Vec::new(), vec![text("gen_ai.operation.name", "invoke_agent".into()), text("gen_ai.agent.name", agent.clone())])
            } else {
                (
                    run_id.to_be_bytes().to_vec(),
                    vec![
                        text("gen_ai.operation.name", "execute_tool".into()),
                        text("gen_ai.tool.name", "web_search".into()),
                        text("gen_ai.tool.call.arguments", format!("{{\"query\": \"step {i} of request {r}\", \"top_k\": 5}}")),
                        text("gen_ai.tool.call.result", format!("five results for step {i}: {}", "lorem ipsum ".repeat(12))),
                    ],
                )
            };
            Span {
                trace_id: trace_id.to_vec(),
                span_id: (i as u64 + 1).to_be_bytes().to_vec(),
                parent_span_id: parent,
                name: "span".into(),
                start_time_unix_nano: 1_700_000_000_000_000_000 + i as u64,
                end_time_unix_nano: 1_700_000_000_000_000_100 + i as u64,
                attributes,
                ..Span::default()
            }
        })
        .collect();
    let resource = Some(Resource { attributes: vec![text("service.name", "bench".into())], ..Resource::default() });
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans { resource, scope_spans: vec![ScopeSpans { spans, ..ScopeSpans::default() }], ..ResourceSpans::default() }],
    }
}

/// Actions per second the store alone signs and durably appends in the
/// same batches: each request's spans split by agent, one atomic write.
fn store_limit(spans: usize, batch: usize, agents: usize) -> Result<f64> {
    let dir = tempfile::tempdir()?;
    // Synced, as the node is.
    let store = agora_store::Store::open(dir.path().join("store"), &agora_store::StoreOptions { create: true, sync: true, ..Default::default() })?;
    let keys: Vec<AgentKey> = (0..agents).map(|a| AgentKey::from_seed([a as u8 + 1; 32])).collect();
    let payload = |i: usize| {
        Event::Action {
            operation: "execute_tool".into(),
            name: "web_search".into(),
            conversation: String::new(),
            span: format!("{:032x}/{:016x}", 1, i + 1),
            parent: format!("{:032x}/{:016x}", 1, (1 << 40) + i % agents),
            cause: None,
            input_hash: Some([1; 32]),
            output_hash: Some([2; 32]),
            text: String::new(),
            error: String::new(),
        }
        .encode()
    };
    let started = Instant::now();
    for r in 0..spans / batch {
        let per_agent: Vec<Vec<Vec<u8>>> = (0..agents).map(|a| (a..batch).step_by(agents).map(|i| payload(r * batch + i)).collect()).collect();
        let refs: Vec<Vec<&[u8]>> = per_agent.iter().map(|p| p.iter().map(Vec::as_slice).collect()).collect();
        let chains: Vec<(&AgentKey, &[&[u8]])> = keys.iter().zip(&refs).map(|(k, p)| (k, p.as_slice())).collect();
        store.append_chains(&chains, 1_700_000_000_000 + r as u64)?;
    }
    Ok(spans as f64 / started.elapsed().as_secs_f64())
}
