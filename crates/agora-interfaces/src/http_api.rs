//! The node's JSON API: every operation of `ops/` at `POST /v1/ops/<name>`
//! (a JSON body, the operation's input; a JSON answer, its output), behind
//! the control channel's bearer token, and the OpenAPI 3.1 document that
//! describes them, generated from the same catalog and types, at
//! `GET /v1/openapi.json`.
//!
//! One error shape for every answer that is not a success, on every route
//! of the control channel (the operations, unknown paths, wrong methods,
//! bodies over a limit, a missing token) and in MCP's tool errors and the
//! command line's `--json` errors: [`ApiError`], `{"code", "rule",
//! "message", "entry"}`, as `application/json`. `code` is the kind of
//! failure (the HTTP status follows from it), `rule` the rule broken by
//! name (a reasoning rule such as `wrong_state`, an input rule such as
//! `not_an_entry_id` or `input_schema`, a route's such as `body_limit`),
//! and `entry` the entry it concerns or null. [`json_errors`] gives the
//! shape to the answers a route did not shape itself.

use agora_commands::control::AGENT_HEADER;
use agora_commands::ops::operation::{REFERENCES, STATUSES};
use agora_commands::ops::{Backend, Effect, OpError, Operation, catalog};
use agora_commands::output::{UNNAMED_RULE, error_code};
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Map, Value, json};
use std::sync::{Arc, OnceLock};

/// Largest request body: a move carries at most a payload's worth of text,
/// JSON-escaped; an imported pack is bounded by this (larger packs go
/// through `agora import`, which streams them over the control channel).
pub const BODY_BYTES_MAX: usize = 32 << 20;

/// What of an unshaped error answer's own text is kept as its message.
const ERROR_TEXT_BYTES_MAX: usize = 4 << 10;

/// The error of every front end: one shape for every failure.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ApiError {
    /// What kind of failure, which decides the HTTP status: `bad_request`
    /// (400: the body is not a JSON object, or the request is malformed),
    /// `bad_input` (400: the input breaks an input rule: it does not match
    /// the operation's schema, an id is not hex or not 64 digits, a time is
    /// not a time, a text is over its limit), `unauthorized` (401: the
    /// bearer token or the page's session is missing or wrong),
    /// `forbidden` (403: a move asked with the live page's session, which
    /// opens reads only), `not_found` (404: a referenced entry is not held
    /// here), `unknown_operation` and `unknown_route` (404),
    /// `method_not_allowed` (405: the `Allow` header lists the methods the
    /// route takes), `too_large` (413: the body is over the route's limit),
    /// `refused` (422: a rule of the log was broken), `internal` (500),
    /// `unavailable` (503: the node is shutting down, or at a limit); any
    /// other failure of HTTP itself, its status's name (`not_acceptable`:
    /// an MCP client that does not accept the answer's types, ...).
    pub code: String,
    /// The rule broken, by name: always present. A rule of the reasoning
    /// graph (`wrong_state`, `wrong_kind`, `synthesis_arity`, ...), of the
    /// merge layer (`self_accept`, `already_disputed`, ...) or of the
    /// roster (`founder_only`), an input rule (`input_schema`,
    /// `not_an_entry_id`, `not_an_agent_id`, `ambiguous_prefix`,
    /// `not_a_time`, `limit`, ...), `unknown_entry`, a route's rule
    /// (`credentials`: the bearer token or the page's session;
    /// `unknown_route`, `method`, `body_limit`, `json_body`,
    /// `bad_request`), or `command_failed` where the command names none.
    pub rule: String,
    /// What went wrong, in words.
    pub message: String,
    /// The entry concerned, or null.
    #[serde(default)]
    pub entry: Option<String>,
}

impl ApiError {
    /// An error of kind `code`, with that kind's rule (`credentials` for
    /// `unauthorized`, `reads_only` for `forbidden`, else the code itself;
    /// [`Self::rule`] names another).
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        let rule = match code {
            "unauthorized" => "credentials",
            "forbidden" => "reads_only",
            other => other,
        };
        Self { code: code.to_string(), rule: rule.to_string(), message: message.into(), entry: None }
    }

    /// The same error, naming the rule broken.
    pub fn rule(mut self, rule: &str) -> Self {
        self.rule = rule.to_string();
        self
    }

    /// The HTTP status of the error's kind.
    pub fn status(&self) -> StatusCode {
        match self.code.as_str() {
            "bad_request" | "bad_input" => StatusCode::BAD_REQUEST,
            "unauthorized" => StatusCode::UNAUTHORIZED,
            "forbidden" => StatusCode::FORBIDDEN,
            "unknown_operation" | "unknown_route" | "not_found" => StatusCode::NOT_FOUND,
            "method_not_allowed" => StatusCode::METHOD_NOT_ALLOWED,
            "too_large" => StatusCode::PAYLOAD_TOO_LARGE,
            "unsupported_media_type" => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "refused" => StatusCode::UNPROCESSABLE_ENTITY,
            "unavailable" => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// An operation's failure: its rule (or [`UNNAMED_RULE`]), the kind
    /// that rule is ([`error_code`]), its message and entry.
    pub fn from_op(e: OpError) -> Self {
        let rule = match e.rule {
            Some(rule) => rule,
            None if e.message.contains("shutting down") => "shutting_down".to_string(),
            None => UNNAMED_RULE.to_string(),
        };
        let code = e.code.unwrap_or_else(|| error_code(&rule).to_string());
        Self { code, rule, message: e.message, entry: e.entry }
    }

    /// The error for an answer of `status` that carried no error shape
    /// (a route's own refusal, the router's 404 and 405, a body limit's
    /// 413), its text `said`; `method` and `path` are the request's, and
    /// `allow` the methods the route takes (405).
    pub fn for_status(status: StatusCode, said: &str, method: &str, path: &str, allow: Option<&str>) -> Self {
        let said = if said.is_empty() { None } else { Some(said) };
        let (code, rule, message) = match status {
            StatusCode::BAD_REQUEST => ("bad_request", "bad_request", said.map_or_else(|| "the request is malformed".to_string(), str::to_string)),
            StatusCode::UNAUTHORIZED => ("unauthorized", "credentials", said.map_or_else(|| "bad or missing bearer token".to_string(), str::to_string)),
            StatusCode::FORBIDDEN => ("forbidden", "reads_only", said.map_or_else(|| format!("{method} {path} is not allowed here"), str::to_string)),
            // A route's own 404 (MCP's unknown session, say) says what was not found.
            StatusCode::NOT_FOUND => match said {
                Some(said) => ("not_found", "not_found", said.to_string()),
                None => ("unknown_route", "unknown_route", format!("no route {path}: GET /v1/openapi.json lists the API's")),
            },
            StatusCode::METHOD_NOT_ALLOWED => {
                let takes =
                    allow.filter(|a| !a.is_empty()).map_or_else(|| "the Allow header lists the methods it takes".to_string(), |a| format!("it takes {a}"));
                ("method_not_allowed", "method", format!("{path} does not take {method}: {takes}"))
            }
            StatusCode::PAYLOAD_TOO_LARGE => ("too_large", "body_limit", format!("the body of {method} {path} is larger than the route's limit")),
            StatusCode::SERVICE_UNAVAILABLE => ("unavailable", "unavailable", said.map_or_else(|| "the node cannot answer now".to_string(), str::to_string)),
            s if s.is_server_error() => ("internal", "internal", said.map_or_else(|| s.to_string(), str::to_string)),
            s => {
                let name = s.canonical_reason().unwrap_or("client error").to_lowercase().replace([' ', '-'], "_");
                let message = said.map_or_else(|| s.to_string(), str::to_string);
                return Self { code: name.clone(), rule: name, message, entry: None };
            }
        };
        Self { code: code.to_string(), rule: rule.to_string(), message, entry: None }
    }

    /// The error as MCP's structured content of a tool error.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| json!({ "code": self.code, "rule": self.rule, "message": self.message, "entry": self.entry }))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status(), Json(self)).into_response()
    }
}

/// The answer to a path no route serves: 404 in the error shape.
pub async fn unknown_route(uri: axum::http::Uri) -> Response {
    ApiError::new("unknown_route", format!("no route {}: GET /v1/openapi.json lists the API's", uri.path())).into_response()
}

fn is_json(response: &Response) -> bool {
    response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"))
}

/// A middleware that gives every error answer (4xx and 5xx) that is not
/// JSON already the error shape, keeping its status and headers (a 405's
/// `Allow`, a refusal's `Connection: close`): the router's own 404 and
/// 405, a body limit's 413, and the text of any route's refusal, which
/// becomes the message. Layered over the whole control channel.
pub async fn json_errors(request: Request, next: Next) -> Response {
    let (method, path) = (request.method().to_string(), request.uri().path().to_string());
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(&response) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let said = axum::body::to_bytes(body, ERROR_TEXT_BYTES_MAX).await.map(|b| String::from_utf8_lossy(&b).trim().to_string()).unwrap_or_default();
    let allow = parts.headers.get(header::ALLOW).and_then(|v| v.to_str().ok());
    let error = ApiError::for_status(status, &said, &method, &path, allow);
    let body = serde_json::to_vec(&error).unwrap_or_default();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Response::from_parts(parts, Body::from(body))
}

/// Check `input` against the bounds its operation's schema states, which
/// deserializing it does not (types, required and unknown fields it does):
/// a number's `minimum` and `maximum`, a text's `minLength` and
/// `maxLength` (in characters, as JSON Schema counts), a list's `minItems`
/// and `maxItems`. A field out of bounds is bad input (`input_schema`),
/// named. The JSON API and MCP check every call so.
pub fn check_input(op: &Operation, input: &Value) -> Result<(), ApiError> {
    static SCHEMAS: OnceLock<std::collections::HashMap<&'static str, Map<String, Value>>> = OnceLock::new();
    let schemas = SCHEMAS.get_or_init(|| operations().iter().map(|o| (o.name, (o.input_schema)())).collect());
    let (Some(Some(Value::Object(props))), Value::Object(fields)) = (schemas.get(op.name).map(|s| s.get("properties")), input) else { return Ok(()) };
    let out_of_bounds = |what: String| Err(ApiError::new("bad_input", format!("{}: {what}", op.name)).rule("input_schema"));
    for (name, value) in fields {
        let Some(Value::Object(schema)) = props.get(name) else { continue };
        let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
        let (size, unit) = match value {
            Value::Number(n) => {
                let x = n.as_f64().unwrap_or_default();
                if let Some(min) = bound("minimum").filter(|min| x < *min) {
                    return out_of_bounds(format!("`{name}` is {n}, less than its minimum {min}"));
                }
                if let Some(max) = bound("maximum").filter(|max| x > *max) {
                    return out_of_bounds(format!("`{name}` is {n}, more than its maximum {max}"));
                }
                continue;
            }
            Value::String(t) => (t.chars().count() as f64, ("minLength", "maxLength", "characters")),
            Value::Array(a) => (a.len() as f64, ("minItems", "maxItems", "items")),
            _ => continue,
        };
        let (min_key, max_key, counted) = unit;
        if let Some(min) = bound(min_key).filter(|min| size < *min) {
            return out_of_bounds(format!("`{name}` has {size} {counted}, fewer than its {min_key} {min}"));
        }
        if let Some(max) = bound(max_key).filter(|max| size > *max) {
            return out_of_bounds(format!("`{name}` has {size} {counted}, more than its {max_key} {max}"));
        }
    }
    Ok(())
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
            ApiError::new("forbidden", format!("{name} is not a read: the page's session opens reads only")).rule("reads_only").into_response()
        }
        // The page reads as the node's own agent.
        _ => call(State(backend), Path(name), HeaderMap::new(), body).await,
    }
}

/// `POST /v1/ops/<name>`: the operation, acting as the agent of the node's
/// keyring the `Agora-Agent` header names (none: the node's own agent).
async fn call(State(backend): State<Arc<dyn Backend>>, Path(name): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    let agent = match headers.get(AGENT_HEADER).map(|v| v.to_str()) {
        None => None,
        Some(Ok(name)) => Some(name.to_string()),
        Some(Err(_)) => return ApiError::new("bad_input", format!("the {AGENT_HEADER} header is not text")).rule("not_an_agent_name").into_response(),
    };
    let Some(op) = operations().iter().find(|o| o.name == name) else {
        return ApiError::new("unknown_operation", format!("no operation {name:?}; GET /v1/openapi.json lists them")).into_response();
    };
    let input: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return ApiError::new("bad_request", "the body must be a JSON object").rule("json_body").into_response(),
            Err(e) => return ApiError::new("bad_request", format!("the body is not JSON: {e}")).rule("json_body").into_response(),
        }
    };
    if let Err(e) = check_input(op, &input) {
        return e.into_response();
    }
    match tokio::task::spawn_blocking(move || backend.call(agent.as_deref(), op, input)).await {
        Ok(Ok(v)) => (StatusCode::OK, Json(as_object(v))).into_response(),
        Ok(Err(e)) => ApiError::from_op(e).into_response(),
        Err(e) => ApiError::new("internal", format!("the operation stopped unexpectedly: {e}")).into_response(),
    }
}

/// A result as a JSON object, as MCP's structured content is one: a list
/// comes back as `{"result": [...]}`.
fn as_object(v: Value) -> Value {
    match v {
        Value::Object(_) => v,
        other => json!({ "result": other }),
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

/// The error answers every operation may give, by status: each a response
/// of the document's `components`, all with the one error shape.
const ERROR_RESPONSES: &[(&str, &str, &str)] = &[
    (
        "400",
        "BadInput",
        "The body is not a JSON object (`bad_request`), or its input breaks an input rule (`bad_input`): it does not match the operation's schema (`input_schema`), an id is not hex or not 64 digits (`not_an_entry_id`, `not_an_agent_id`), a prefix matches several entries (`ambiguous_prefix`), a time is not one (`not_a_time`), a text is over its limit (`limit`).",
    ),
    ("401", "Unauthorized", "The bearer token is missing or wrong (`unauthorized`, rule `credentials`). The connection is closed after the answer."),
    (
        "404",
        "NotFound",
        "A referenced entry is not held here (`not_found`, rule `unknown_entry`, `entry` names it), or no such operation (`unknown_operation`).",
    ),
    ("405", "MethodNotAllowed", "The route takes another method (`method_not_allowed`): `Allow` lists it."),
    ("413", "TooLarge", "The body is larger than the route's limit (`too_large`, rule `body_limit`)."),
    ("422", "Refused", "A rule of the log was broken (`refused`): `rule` names it, `entry` the entry it concerns."),
    ("500", "Internal", "The node failed (`internal`)."),
    ("503", "Unavailable", "The node is shutting down (`unavailable`)."),
];

/// What the document says once about errors.
const ERRORS_DESCRIPTION: &str = "Every answer that is not a success, on every route of the node's control channel, is one JSON object (`application/json`; `#/components/schemas/Error`): `code`, the kind of failure, which decides the status; `rule`, the rule broken by name, always present; `message`, in words; `entry`, the entry concerned or null. MCP's tool errors carry the same object as their structured content, and `agora --json` prints it on a failure.";

/// The OpenAPI 3.1 document, built once from the catalog.
pub fn openapi() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut defs = Map::new();
        let error = match serde_json::to_value(schemars::schema_for!(ApiError)) {
            Ok(Value::Object(m)) => hoist(m, &mut defs),
            _ => json!({ "type": "object" }),
        };
        defs.insert("Error".to_string(), error);
        let mut responses = Map::new();
        for (status, name, what) in ERROR_RESPONSES {
            let mut response = json!({ "description": what, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } });
            if *status == "405" {
                response["headers"] = json!({ "Allow": { "description": "The methods the route takes.", "required": true, "schema": { "type": "string" } } });
            }
            responses.insert(name.to_string(), response);
        }
        let mut paths = Map::new();
        for op in operations() {
            let input = hoist((op.input_schema)(), &mut defs);
            let output = hoist((op.output_schema)(), &mut defs);
            // An empty body is the empty input: a body is required where the input has a required field.
            let required = input.get("required").and_then(Value::as_array).is_some_and(|r| !r.is_empty());
            let effect = op.effect.sentence();
            let mut answers = Map::new();
            answers.insert("200".to_string(), json!({ "description": "The operation's result.", "content": { "application/json": { "schema": output } } }));
            for (status, name, _) in ERROR_RESPONSES {
                answers.insert(status.to_string(), json!({ "$ref": format!("#/components/responses/{name}") }));
            }
            paths.insert(
                format!("/v1/ops/{}", op.name),
                json!({ "post": {
                    "operationId": op.name,
                    "summary": op.title,
                    "description": format!("{} {effect}", op.description),
                    "tags": [if op.effect == Effect::Read { "reads" } else { "moves" }],
                    "requestBody": { "required": required, "content": { "application/json": { "schema": input } } },
                    "responses": answers,
                }}),
            );
        }
        json!({
            "openapi": "3.1.0",
            "info": {
                "title": "Agora node API",
                "version": env!("CARGO_PKG_VERSION"),
                "description": format!("Every reasoning move, merge-layer move and read of Agora as one JSON operation, run on the node's open store exactly as the `agora` command of the same name. Authenticate with the node's control token (`token` in `<home>/node.json`) as a bearer token. Bodies are at most {BODY_BYTES_MAX} bytes. {REFERENCES} {STATUSES} {ERRORS_DESCRIPTION}"),
            },
            "security": [{ "bearer": [] }],
            "paths": paths,
            "components": {
                "schemas": defs,
                "responses": responses,
                "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer", "description": "The node's control token (`token` in `<home>/node.json`)." } },
            },
        })
    })
}
