//! The node's JSON API: every operation of `ops/` at `POST /v1/ops/<name>`
//! (a JSON body, the operation's input; a JSON answer, its output), behind
//! the control channel's bearer token, and the OpenAPI 3.1 document that
//! describes them, generated from the same catalog and types, at
//! `GET /v1/openapi.json`.
//!
//! One error shape for every failure: `{"code", "message", "rule"?,
//! "entry"?}`, where `rule` names the rule broken (a reasoning rule such as
//! `wrong_state`, `input_schema`, `unknown_entry`, ...) and `entry` the
//! entry it concerns.

use agora_commands::ops::{Backend, Effect, OpError, Operation, catalog};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Map, Value, json};
use std::sync::{Arc, OnceLock};

/// Largest request body: a move carries at most a payload's worth of text,
/// JSON-escaped; an imported pack is bounded by this (larger packs go
/// through `agora import`, which streams them over the control channel).
const BODY_BYTES_MAX: usize = 32 << 20;

/// The API's error: one shape for every failure.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ApiError {
    /// What kind of failure: `unauthorized`, `forbidden` (a move asked
    /// with the live page's session, which opens reads only),
    /// `unknown_operation`,
    /// `bad_request` (the body is not JSON), `bad_input` (it does not match
    /// the operation's schema), `not_found` (a referenced entry is not
    /// here), `refused` (a rule was broken), `unavailable` (shutting down),
    /// `internal`.
    pub code: String,
    /// What went wrong, in words.
    pub message: String,
    /// The rule broken, by name, where one applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The entry concerned, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

impl ApiError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self { code: code.to_string(), message: message.into(), rule: None, entry: None }
    }

    fn status(&self) -> StatusCode {
        match self.code.as_str() {
            "unauthorized" => StatusCode::UNAUTHORIZED,
            "forbidden" => StatusCode::FORBIDDEN,
            "unknown_operation" | "not_found" => StatusCode::NOT_FOUND,
            "bad_request" | "bad_input" => StatusCode::BAD_REQUEST,
            "refused" => StatusCode::UNPROCESSABLE_ENTITY,
            "unavailable" => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn from_op(e: OpError) -> Self {
        let code = match e.rule.as_deref() {
            Some("input_schema") | Some("usage") => "bad_input",
            Some("unknown_entry") => "not_found",
            _ if e.message.contains("shutting down") => "unavailable",
            _ => "refused",
        };
        Self { code: code.to_string(), message: e.message, rule: e.rule, entry: e.entry }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status(), Json(self)).into_response()
    }
}

fn operations() -> &'static [Operation] {
    static OPS: OnceLock<Vec<Operation>> = OnceLock::new();
    OPS.get_or_init(catalog)
}

/// The API's routes: the operations, run by `backend`, behind the token
/// (the caller layers it), and the document without (it holds no secret).
pub fn routes(backend: Arc<dyn Backend>) -> (Router, Router) {
    let ops = Router::new().route("/v1/ops/{name}", post(call).layer(DefaultBodyLimit::max(BODY_BYTES_MAX))).with_state(backend);
    let open = Router::new().route("/v1/openapi.json", get(|| async { Json(openapi().clone()) }));
    (ops, open)
}

/// `<base>/v1/ops/<name>` for the read operations only (the live page's
/// reads; a move or an import answers 403 `forbidden`), run by `backend`,
/// behind whatever the caller layers.
pub fn read_routes(backend: Arc<dyn Backend>, base: &str) -> Router {
    Router::new().route(&format!("{base}/v1/ops/{{name}}"), post(call_read).layer(DefaultBodyLimit::max(BODY_BYTES_MAX))).with_state(backend)
}

async fn call_read(State(backend): State<Arc<dyn Backend>>, Path(name): Path<String>, body: Bytes) -> Response {
    match operations().iter().find(|o| o.name == name) {
        Some(op) if op.effect != Effect::Read => {
            ApiError::new("forbidden", format!("{name} is not a read: the page's session opens reads only")).into_response()
        }
        _ => call(State(backend), Path(name), body).await,
    }
}

async fn call(State(backend): State<Arc<dyn Backend>>, Path(name): Path<String>, body: Bytes) -> Response {
    let Some(op) = operations().iter().find(|o| o.name == name) else {
        return ApiError::new("unknown_operation", format!("no operation {name:?}; GET /v1/openapi.json lists them")).into_response();
    };
    let input: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return ApiError::new("bad_request", "the body must be a JSON object").into_response(),
            Err(e) => return ApiError::new("bad_request", format!("the body is not JSON: {e}")).into_response(),
        }
    };
    match tokio::task::spawn_blocking(move || backend.call(op, input)).await {
        Ok(Ok(v)) => (StatusCode::OK, Json(catalog::as_object(v))).into_response(),
        Ok(Err(e)) => ApiError::from_op(e).into_response(),
        Err(e) => ApiError::new("internal", format!("the operation stopped unexpectedly: {e}")).into_response(),
    }
}

/// Move a schema's `$defs` into `defs` and point its references there (an
/// OpenAPI document resolves `#/...` against itself, not the schema).
fn hoist(mut schema: Map<String, Value>, defs: &mut Map<String, Value>) -> Value {
    schema.remove("$schema");
    if let Some(Value::Object(local)) = schema.remove("$defs") {
        for (k, v) in local {
            let v = match v {
                Value::Object(m) => hoist(m, defs),
                other => other,
            };
            defs.insert(k, v);
        }
    }
    let mut v = Value::Object(schema);
    rewrite_refs(&mut v);
    v
}

fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/$defs/")
            {
                *r = format!("#/components/schemas/{name}");
            }
            m.values_mut().for_each(rewrite_refs);
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// The OpenAPI 3.1 document, built once from the catalog.
pub fn openapi() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut defs = Map::new();
        let error = hoist(catalog::schema_of::<ApiError>(), &mut defs);
        defs.insert("Error".to_string(), error);
        let err = |what: &str| json!({ "description": what, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } });
        let mut paths = Map::new();
        for op in operations() {
            let input = hoist((op.input_schema)(), &mut defs);
            let output = hoist((op.output_schema)(), &mut defs);
            let effect = op.effect.sentence();
            paths.insert(
                format!("/v1/ops/{}", op.name),
                json!({ "post": {
                    "operationId": op.name,
                    "summary": op.title,
                    "description": format!("{} {effect}", op.description),
                    "tags": [if op.effect == Effect::Read { "reads" } else { "moves" }],
                    "requestBody": { "required": true, "content": { "application/json": { "schema": input } } },
                    "responses": {
                        "200": { "description": "The operation's result.", "content": { "application/json": { "schema": output } } },
                        "400": err("The body is not a JSON object, or does not match the operation's input schema."),
                        "401": err("The bearer token is missing or wrong."),
                        "404": err("A referenced entry is not held here."),
                        "413": { "description": "The body is larger than the limit." },
                        "422": err("A rule was broken: `rule` names it, `entry` the entry it concerns."),
                        "503": err("The node is shutting down."),
                    },
                }}),
            );
        }
        json!({
            "openapi": "3.1.0",
            "info": {
                "title": "Agora node API",
                "version": env!("CARGO_PKG_VERSION"),
                "description": "Every reasoning move, merge-layer move and read of Agora as one JSON operation, run on the node's open store exactly as the `agora` command of the same name. Authenticate with the node's control token (`token` in `<home>/node.json`) as a bearer token.",
            },
            "security": [{ "bearer": [] }],
            "paths": paths,
            "components": {
                "schemas": defs,
                "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer", "description": "The node's control token (`token` in `<home>/node.json`)." } },
            },
        })
    })
}
