use super::*;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Status};

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue { key: key.into(), value: Some(AnyValue { value: Some(any_value::Value::StringValue(value.into())) }), ..KeyValue::default() }
}

fn span(id: u8, parent: Option<u8>, start: u64, attrs: Vec<KeyValue>) -> Span {
    Span {
        trace_id: vec![7; 16],
        span_id: vec![id; 8],
        parent_span_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
        name: format!("span {id}"),
        start_time_unix_nano: start,
        end_time_unix_nano: start + 10,
        attributes: attrs,
        ..Span::default()
    }
}

fn request(service: Option<&str>, spans: Vec<Span>) -> ExportTraceServiceRequest {
    let resource = service.map(|s| Resource { attributes: vec![kv("service.name", s)], ..Resource::default() });
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans { resource, scope_spans: vec![ScopeSpans { spans, ..ScopeSpans::default() }], ..ResourceSpans::default() }],
    }
}

fn keyring(name: &str) -> bool {
    matches!(name, "planner" | "researcher" | "self")
}

#[test]
fn a_tool_span_is_its_agents_action_with_hashes_and_a_parent() {
    let root = span(1, None, 100, vec![kv("gen_ai.operation.name", "invoke_agent"), kv("gen_ai.agent.name", "planner"), kv("gen_ai.conversation.id", "c1")]);
    let tool = span(
        2,
        Some(1),
        110,
        vec![
            kv("gen_ai.operation.name", "execute_tool"),
            kv("gen_ai.tool.name", "search"),
            kv("gen_ai.tool.call.arguments", "{\"q\":1}"),
            kv("gen_ai.tool.call.result", "ok"),
        ],
    );
    // The child ended first, so it comes first in the request.
    let p = plan(&request(None, vec![tool, root]), &Mapping::default(), &keyring);
    assert!(p.refused.is_empty(), "{:?}", p.refused);
    assert_eq!(p.planned.len(), 2);
    let (first, second) = (&p.planned[0], &p.planned[1]);
    assert_eq!((first.action.operation.as_str(), first.action.name.as_str(), first.agent.as_str()), ("invoke_agent", "planner", "planner"));
    assert_eq!(first.action.conversation, "c1");
    assert_eq!(first.action.parent, "");
    // The tool span names no agent: it is its parent's.
    assert_eq!((second.action.operation.as_str(), second.action.name.as_str(), second.agent.as_str()), ("execute_tool", "search", "planner"));
    assert_eq!(second.action.parent, first.action.span);
    assert_eq!(second.action.span, format!("{}/{}", "07".repeat(16), "02".repeat(8)));
    assert_eq!(second.action.input_hash, Some(Sha256::digest(b"{\"q\":1}").into()));
    assert_eq!(second.action.output_hash, Some(Sha256::digest(b"ok").into()));
    assert_eq!(second.action.text, "", "contents are left out unless kept");
    let kept = plan(
        &request(
            None,
            vec![span(
                2,
                None,
                1,
                vec![
                    kv("gen_ai.operation.name", "execute_tool"),
                    kv("gen_ai.agent.name", "planner"),
                    kv("gen_ai.tool.call.arguments", "a"),
                    kv("gen_ai.tool.call.result", "b"),
                ],
            )],
        ),
        &Mapping { keep_contents: true, ..Mapping::default() },
        &keyring,
    );
    assert_eq!(kept.planned[0].action.text, "input: a\noutput: b");
}

#[test]
fn unknown_agents_are_refused_or_mapped_never_invented() {
    let s = || span(3, None, 1, vec![kv("gen_ai.operation.name", "chat"), kv("gen_ai.agent.name", "Planner Bot")]);
    let p = plan(&request(None, vec![s()]), &Mapping::default(), &keyring);
    assert_eq!(p.planned.len(), 0);
    assert!(p.refused[0].reason.contains("\"Planner Bot\" is no agent of this node's keyring"), "{}", p.refused[0].reason);
    let mapped = Mapping { agents: BTreeMap::from([("Planner Bot".into(), "planner".into())]), ..Mapping::default() };
    assert_eq!(plan(&request(None, vec![s()]), &mapped, &keyring).planned[0].agent, "planner");
    let to_nobody = Mapping { agents: BTreeMap::from([("Planner Bot".into(), "ghost".into())]), ..Mapping::default() };
    assert!(plan(&request(None, vec![s()]), &to_nobody, &keyring).refused[0].reason.contains("not an agent of this node's keyring"));
    let default = Mapping { default_agent: Some("self".into()), ..Mapping::default() };
    assert_eq!(plan(&request(None, vec![s()]), &default, &keyring).planned[0].agent, "self");
    // No agent named anywhere: the resource's service name.
    let bare = span(4, None, 1, vec![kv("gen_ai.operation.name", "plan")]);
    assert_eq!(plan(&request(Some("researcher"), vec![bare.clone()]), &Mapping::default(), &keyring).planned[0].agent, "researcher");
    assert!(plan(&request(None, vec![bare]), &Mapping::default(), &keyring).refused[0].reason.contains("names no agent"));
}

#[test]
fn other_spans_are_left_out_and_bad_ones_refused_by_name() {
    let http = span(5, None, 1, vec![kv("http.method", "GET")]);
    let bad_op = span(6, None, 1, vec![kv("gen_ai.operation.name", "Invoke Agent"), kv("gen_ai.agent.name", "planner")]);
    let mut no_id = span(7, None, 1, vec![kv("gen_ai.operation.name", "chat"), kv("gen_ai.agent.name", "planner")]);
    no_id.span_id = vec![0; 8];
    let bad_cause = span(8, None, 1, vec![kv("gen_ai.operation.name", "chat"), kv("gen_ai.agent.name", "planner"), kv("agora.cause", "xyz")]);
    let long_name = span(
        9,
        None,
        1,
        vec![kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.agent.name", "planner"), kv("gen_ai.tool.name", &"n".repeat(FIELD_BYTES_MAX + 1))],
    );
    let mut failed = span(10, None, 1, vec![kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.agent.name", "planner")]);
    failed.status = Some(Status { message: "timeout".into(), code: StatusCode::Error as i32 });
    let p = plan(&request(None, vec![http, bad_op, no_id, bad_cause, long_name, failed]), &Mapping::default(), &keyring);
    assert_eq!(p.ignored, 1);
    let reasons: Vec<&str> = p.refused.iter().map(|r| r.reason.as_str()).collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    assert!(reasons[0].contains("\"Invoke Agent\" is not an operation name"));
    assert!(reasons[1].contains("no valid trace id"));
    assert!(reasons[2].contains("agora.cause \"xyz\" is not an event id"));
    assert!(reasons[3].contains("name is 1025 bytes"));
    assert_eq!(p.planned.len(), 1);
    assert_eq!(p.planned[0].action.error, "timeout");
}

#[test]
fn a_span_may_carry_a_reasoning_move() {
    let target = "ab".repeat(32);
    let s = span(
        11,
        None,
        1,
        vec![
            kv("agora.move", "contradict"),
            kv("agora.move.target", &target),
            kv("agora.move.text", "the numbers are from 2019"),
            kv("gen_ai.agent.name", "researcher"),
        ],
    );
    let p = plan(&request(None, vec![s]), &Mapping::default(), &keyring);
    let planned = &p.planned[0];
    assert_eq!(planned.action.operation, "move");
    let m = planned.carried_move.as_ref().unwrap();
    assert_eq!(m.operation, "contradict");
    assert_eq!(m.input["target"], target);
    assert_eq!(m.input["text"], "the numbers are from 2019");
}

#[test]
fn structured_contents_hash_as_their_json_text_and_given_hashes_win() {
    let list = AnyValue {
        value: Some(any_value::Value::ArrayValue(opentelemetry_proto::tonic::common::v1::ArrayValue {
            values: vec![AnyValue { value: Some(any_value::Value::StringValue("hi".into())) }, AnyValue { value: Some(any_value::Value::IntValue(3)) }],
        })),
    };
    let given = "cd".repeat(32);
    let s = span(
        12,
        None,
        1,
        vec![
            kv("gen_ai.operation.name", "chat"),
            kv("gen_ai.agent.name", "planner"),
            KeyValue { key: "gen_ai.input.messages".into(), value: Some(list), ..KeyValue::default() },
            kv("agora.output.sha256", &given),
        ],
    );
    let a = &plan(&request(None, vec![s]), &Mapping::default(), &keyring).planned[0].action;
    assert_eq!(a.input_hash, Some(Sha256::digest(b"[\"hi\",3]").into()));
    assert_eq!(a.output_hash.map(hex::encode), Some(given));
}

#[test]
fn a_cycle_of_parent_ids_ends() {
    let a = span(13, Some(14), 1, vec![kv("gen_ai.operation.name", "plan")]);
    let b = span(14, Some(13), 2, vec![kv("gen_ai.operation.name", "plan")]);
    let p = plan(&request(None, vec![a, b]), &Mapping::default(), &keyring);
    assert_eq!(p.refused.len(), 2);
}

#[test]
fn json_requests_read_like_protobuf_ones() {
    let body = serde_json::json!({
        "resourceSpans": [{
            "resource": { "attributes": [{ "key": "service.name", "value": { "stringValue": "planner" } }] },
            "scopeSpans": [{ "spans": [{
                "traceId": "0707070707070707070707070707070a",
                "spanId": "0101010101010101",
                "name": "plan",
                "startTimeUnixNano": "1700000000000000000",
                "endTimeUnixNano": "1700000000000000100",
                "attributes": [{ "key": "gen_ai.operation.name", "value": { "stringValue": "plan" } }]
            }] }]
        }]
    });
    let r = crate::decode(body.to_string().as_bytes(), crate::Encoding::Json).unwrap();
    let p = plan(&r, &Mapping::default(), &keyring);
    assert_eq!(p.planned.len(), 1, "{:?}", p.refused);
    assert_eq!(p.planned[0].agent, "planner");
    assert_eq!(p.planned[0].start_ns, 1_700_000_000_000_000_000);
}

#[test]
fn a_memory_span_names_its_record_and_the_state_it_wrote() {
    let write = |id: u8, op: &str, extra: Vec<KeyValue>| {
        let mut attrs = vec![kv("gen_ai.operation.name", op), kv("gen_ai.agent.name", "planner"), kv("gen_ai.memory.store.id", "store-1")];
        attrs.extend(extra);
        span(id, None, u64::from(id), attrs)
    };
    let spans = vec![
        write(1, "update_memory", vec![kv("gen_ai.memory.record.id", "r1"), kv("gen_ai.memory.content", "likes tea"), kv("gen_ai.memory.type", "preference")]),
        write(2, "create_memory", vec![kv("gen_ai.memory.id", "r2"), kv("gen_ai.memory.content", "x"), kv("gen_ai.memory.scope", "user:ann")]),
        write(3, "delete_memory", vec![kv("gen_ai.memory.record.id", "r1")]),
        // A store's operation and a search name no record: actions only.
        write(4, "update_memory", vec![]),
        write(5, "search_memory", vec![kv("gen_ai.memory.record.id", "r1"), kv("gen_ai.memory.query", "tea")]),
        write(6, "create_memory", vec![kv("gen_ai.memory.record.id", "r3"), kv("gen_ai.memory.type", "not a kind")]),
    ];
    let p = plan(&request(None, spans.clone()), &Mapping::default(), &keyring);
    assert!(p.refused.is_empty(), "{:?}", p.refused);
    let names: Vec<&str> = p.planned.iter().map(|x| x.action.name.as_str()).collect();
    assert_eq!(names, ["r1", "r2", "r1", "store-1", "r1", "r3"], "the record id names the action, else the store's");
    let m: Vec<Option<&MemoryDraft>> = p.planned.iter().map(|x| x.memory.as_ref()).collect();
    let first = m[0].unwrap().write.as_ref().unwrap();
    assert_eq!(m[0].unwrap().record, "r1");
    assert_eq!(first.kind, MemoryKind::Preference);
    let hash = hex::encode(Sha256::digest(b"likes tea"));
    assert_eq!(first.text, format!("memory record r1, contents sha256:{hash}"), "contents are left out unless kept");
    assert_eq!(m[1].unwrap().write.as_ref().unwrap().scope, "user:ann");
    assert_eq!(m[1].unwrap().write.as_ref().unwrap().kind, MemoryKind::Episodic);
    assert_eq!(m[2], Some(&MemoryDraft { record: "r1".into(), write: None }));
    assert_eq!((m[3], m[4]), (None, None));
    assert_eq!(m[5].unwrap().write.as_ref().unwrap().kind, MemoryKind::Episodic, "a type that names no kind");
    let kept = plan(&request(None, spans), &Mapping { keep_contents: true, ..Mapping::default() }, &keyring);
    assert_eq!(kept.planned[0].memory.as_ref().unwrap().write.as_ref().unwrap().text, "likes tea");
    // A scope over the bound refuses the span.
    let long = write(7, "create_memory", vec![kv("gen_ai.memory.record.id", "r4"), kv("gen_ai.memory.scope", &"s".repeat(FIELD_BYTES_MAX + 1))]);
    let refused = plan(&request(None, vec![long]), &Mapping::default(), &keyring);
    assert!(refused.refused[0].reason.contains("gen_ai.memory.scope"), "{:?}", refused.refused);
}
