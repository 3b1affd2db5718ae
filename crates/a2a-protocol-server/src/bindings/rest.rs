//! The HTTP+JSON binding (spec §11): resource paths (optionally under `/{tenant}`), query
//! parameters for reads, SSE for streams, and `google.rpc.Status` error bodies.

use std::collections::HashMap;

use a2a_protocol_types::extensions::EXTENSIONS_HEADER;
use a2a_protocol_types::{A2aError, ErrorKind, SendMessageRequest, TaskState, Timestamp};
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use percent_encoding::percent_decode_str;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::call::{Head, VERSION_HEADER};
use super::common::{self, A2A_JSON};
use super::objects::ObjectOnly;
use super::{AppState, sse};
use crate::handler::{CallContext, EventStream, RequestHandler};

pub(super) fn error_response(
    error: &A2aError,
    status: Option<StatusCode>,
    media_type: &'static str,
) -> Response {
    let (code, mut body) = error.to_http();
    let status = status
        .unwrap_or_else(|| StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
    // The body's code is the status the client gets, also when the binding chose it.
    body.error.code = i32::from(status.as_u16());
    let mut response = (status, axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(media_type));
    if let Some(value) = common::retry_after(error) {
        response.headers_mut().insert(RETRY_AFTER, value);
    }
    response
}

/// An operation and its path parameters.
#[derive(Debug, PartialEq, Eq)]
enum Operation {
    Send,
    Stream,
    GetTask(String),
    ListTasks,
    Cancel(String),
    Subscribe(String),
    CreatePushConfig(String),
    GetPushConfig(String, String),
    ListPushConfigs(String),
    DeletePushConfig(String, String),
    ExtendedCard,
}

impl Operation {
    /// The operation's name, as its JSON-RPC method is named.
    fn label(&self) -> &'static str {
        use a2a_protocol_types::jsonrpc::methods;
        match self {
            Self::Send => methods::SEND_MESSAGE,
            Self::Stream => methods::SEND_STREAMING_MESSAGE,
            Self::GetTask(_) => methods::GET_TASK,
            Self::ListTasks => methods::LIST_TASKS,
            Self::Cancel(_) => methods::CANCEL_TASK,
            Self::Subscribe(_) => methods::SUBSCRIBE_TO_TASK,
            Self::CreatePushConfig(_) => methods::CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
            Self::GetPushConfig(..) => methods::GET_TASK_PUSH_NOTIFICATION_CONFIG,
            Self::ListPushConfigs(_) => methods::LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
            Self::DeletePushConfig(..) => methods::DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
            Self::ExtendedCard => methods::GET_EXTENDED_AGENT_CARD,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum RouteError {
    NotFound,
    /// The path exists for these methods only (the `Allow` header's value).
    MethodNotAllowed(&'static str),
    /// The path reads as an operation of a tenant whose name is reserved.
    ReservedTenant,
}

/// `op` when `method` is `allowed`, else 405 listing it.
fn only(
    method: &Method,
    allowed: &Method,
    allow: &'static str,
    op: Operation,
) -> Result<Operation, RouteError> {
    if method == allowed {
        Ok(op)
    } else {
        Err(RouteError::MethodNotAllowed(allow))
    }
}

/// Matches `segments` (decoded, without a tenant) against the binding's paths.
fn route_without_tenant(method: &Method, segments: &[String]) -> Result<Operation, RouteError> {
    use Operation::*;
    let (get, post) = (&Method::GET, &Method::POST);
    let strings: Vec<&str> = segments.iter().map(String::as_str).collect();
    match strings.as_slice() {
        ["message:send"] => only(method, post, "POST", Send),
        ["message:stream"] => only(method, post, "POST", Stream),
        ["tasks"] => only(method, get, "GET", ListTasks),
        ["extendedAgentCard"] => only(method, get, "GET", ExtendedCard),
        ["tasks", last] => {
            if let Some(id) = last.strip_suffix(":cancel") {
                return only(method, post, "POST", Cancel(id.into()));
            }
            if let Some(id) = last.strip_suffix(":subscribe") {
                // The proto maps it to GET, the spec's prose to POST: accept both.
                return if method == get || method == post {
                    Ok(Subscribe(id.into()))
                } else {
                    Err(RouteError::MethodNotAllowed("GET, POST"))
                };
            }
            only(method, get, "GET", GetTask((*last).into()))
        }
        ["tasks", task, "pushNotificationConfigs"] => match *method {
            Method::POST => Ok(CreatePushConfig((*task).into())),
            Method::GET => Ok(ListPushConfigs((*task).into())),
            _ => Err(RouteError::MethodNotAllowed("GET, POST")),
        },
        ["tasks", task, "pushNotificationConfigs", config] => match *method {
            Method::GET => Ok(GetPushConfig((*task).into(), (*config).into())),
            Method::DELETE => Ok(DeletePushConfig((*task).into(), (*config).into())),
            _ => Err(RouteError::MethodNotAllowed("GET, DELETE")),
        },
        _ => Err(RouteError::NotFound),
    }
}

/// Matches a path, first without a tenant, then with its first segment as the tenant. A tenant
/// may not be named `tasks` (see [`crate::handler::RESERVED_TENANTS`]), so a path beginning
/// with `tasks/` always names a task: `GET /tasks/tasks` reads the task `tasks`, and an
/// operation under `/tasks/...` that only a tenant could mean is refused as such.
fn route(method: &Method, segments: &[String]) -> Result<(String, Operation), RouteError> {
    let plain = route_without_tenant(method, segments);
    if plain.is_ok() || segments.len() < 2 {
        return plain.map(|op| (String::new(), op));
    }
    match route_without_tenant(method, &segments[1..]) {
        Ok(_) if crate::handler::is_reserved_tenant(&segments[0]) => {
            Err(RouteError::ReservedTenant)
        }
        Ok(op) => Ok((segments[0].clone(), op)),
        // The path fits no tenant's operation either: say what is wrong with it as it stands.
        Err(RouteError::NotFound) => plain.map(|op| (String::new(), op)),
        Err(error) => match plain {
            Err(RouteError::MethodNotAllowed(allow)) => Err(RouteError::MethodNotAllowed(allow)),
            _ => Err(error),
        },
    }
}

/// The query's parameters by their JSON names: a proto field name (`history_length`) is read
/// as its JSON name (`historyLength`), as ProtoJSON readers do.
fn query_map(query: Option<&str>) -> Result<HashMap<String, String>, A2aError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query.unwrap_or(""))
        .map_err(|_| A2aError::invalid_params("the query string could not be read"))?;
    let mut map = HashMap::with_capacity(pairs.len());
    for (name, value) in pairs {
        let name = json_name(name);
        if map.contains_key(&name) {
            // Both spellings of one field count as the same parameter.
            let name: String = name.chars().take(64).collect();
            return Err(A2aError::invalid_params(format!(
                "the query parameter {name:?} appears twice; send it once"
            ))
            .with_field_violation(name, "repeated"));
        }
        map.insert(name, value);
    }
    Ok(map)
}

/// `lower_snake` as `lowerCamel`; other names unchanged.
fn json_name(name: String) -> String {
    if !name.contains('_') {
        return name;
    }
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

fn query_value(name: &str, raw: &str) -> Result<Value, A2aError> {
    let bad = |expected: &str| {
        let problem = format!(
            "must be {expected}, got {:?}",
            raw.chars().take(64).collect::<String>()
        );
        A2aError::invalid_params(format!("{name}: {problem}")).with_field_violation(name, problem)
    };
    Ok(match name {
        "historyLength" | "pageSize" => {
            Value::from(raw.parse::<i32>().map_err(|_| bad("an integer"))?)
        }
        "includeArtifacts" => Value::Bool(raw.parse::<bool>().map_err(|_| bad("true or false"))?),
        "status" => {
            let state: TaskState =
                raw.parse()
                    .map_err(|e: a2a_protocol_types::UnknownEnumValue| {
                        A2aError::invalid_params(format!("status: {e}"))
                            .with_field_violation("status", e.to_string())
                    })?;
            Value::String(state.as_str().into())
        }
        "statusTimestampAfter" => {
            let stamp: Timestamp = raw.parse().map_err(|_| bad("an RFC 3339 timestamp"))?;
            Value::String(stamp.to_string())
        }
        _ => Value::String(raw.into()),
    })
}

/// The request object of an operation: the body (or query) with path parameters set.
fn request_object<T: DeserializeOwned>(
    mut object: Map<String, Value>,
    tenant: &str,
    path: &[(&str, &str)],
) -> Result<T, A2aError> {
    if !tenant.is_empty() {
        match object.get("tenant").and_then(Value::as_str) {
            Some(body_tenant) if !body_tenant.is_empty() && body_tenant != tenant => {
                return Err(A2aError::invalid_params(
                    "the tenant in the body differs from the tenant in the path; send one",
                )
                .with_field_violation("tenant", "differs from the path"));
            }
            _ => {
                object.insert("tenant".into(), Value::String(tenant.into()));
            }
        }
    }
    for (name, value) in path {
        object.insert((*name).into(), Value::String((*value).into()));
    }
    serde_json::from_value(Value::Object(object)).map_err(|error| {
        A2aError::invalid_params(format!("the request is invalid: {error}"))
            .with_field_violation("body", error.to_string())
    })
}

fn body_object(bytes: &[u8]) -> Result<Map<String, Value>, A2aError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(A2aError::new(
            ErrorKind::InvalidRequest,
            "the body must be a JSON object",
        )),
        Err(error) => Err(A2aError::new(
            ErrorKind::ParseError,
            format!("the body is not valid JSON: {error}"),
        )),
    }
}

enum Outcome {
    Json(Vec<u8>),
    Stream(EventStream),
}

fn json<T: serde::Serialize>(value: T) -> Result<Outcome, A2aError> {
    // Sized for a typical task, so the buffer rarely grows.
    let mut body = Vec::with_capacity(2048);
    serde_json::to_writer(&mut body, &value)
        .map(|()| Outcome::Json(body))
        .map_err(|_| A2aError::internal("the result could not be serialized"))
}

/// A send's request straight from the body, when it reads as one and agrees with the path's
/// tenant. Anything else takes the general path, which explains what is wrong.
fn send_request_fast(bytes: &[u8], tenant: &str) -> Option<SendMessageRequest> {
    let ObjectOnly(mut request) =
        serde_json::from_slice::<ObjectOnly<SendMessageRequest>>(bytes).ok()?;
    if !tenant.is_empty() {
        if !request.tenant.is_empty() && request.tenant != tenant {
            return None;
        }
        tenant.clone_into(&mut request.tenant);
    }
    Some(request)
}

/// The body: a send's typed request, or an object to merge path parameters into.
enum RequestBody {
    Send(Box<SendMessageRequest>),
    Object(Map<String, Value>),
}

impl RequestBody {
    fn send(self, tenant: &str) -> Result<SendMessageRequest, A2aError> {
        match self {
            RequestBody::Send(request) => Ok(*request),
            RequestBody::Object(object) => request_object(object, tenant, &[]),
        }
    }

    fn object(self) -> Map<String, Value> {
        match self {
            RequestBody::Object(object) => object,
            RequestBody::Send(_) => Map::new(),
        }
    }

    fn declared_extensions(&self) -> Vec<String> {
        match self {
            RequestBody::Send(request) => request.message.extensions.clone().unwrap_or_default(),
            RequestBody::Object(object) => common::declared_extensions(object.get("message")),
        }
    }
}

async fn dispatch(
    handler: &RequestHandler,
    tenant: &str,
    operation: Operation,
    body: RequestBody,
    query: Map<String, Value>,
    ctx: &CallContext,
) -> Result<Outcome, A2aError> {
    use Operation::*;
    match operation {
        Send => json(handler.send_message_answer(body.send(tenant)?, ctx).await?),
        Stream => Ok(Outcome::Stream(
            handler
                .send_streaming_message(body.send(tenant)?, ctx)
                .await?,
        )),
        GetTask(id) => json(
            handler
                .get_task(request_object(query, tenant, &[("id", &id)])?, ctx)
                .await?,
        ),
        ListTasks => json(
            handler
                .list_tasks(request_object(query, tenant, &[])?, ctx)
                .await?,
        ),
        Cancel(id) => json(
            handler
                .cancel_task(request_object(body.object(), tenant, &[("id", &id)])?, ctx)
                .await?,
        ),
        Subscribe(id) => Ok(Outcome::Stream(
            handler
                .subscribe_to_task(request_object(query, tenant, &[("id", &id)])?, ctx)
                .await?,
        )),
        CreatePushConfig(task) => json(
            handler
                .create_task_push_notification_config(
                    request_object(body.object(), tenant, &[("taskId", &task)])?,
                    ctx,
                )
                .await?,
        ),
        GetPushConfig(task, id) => json(
            handler
                .get_task_push_notification_config(
                    request_object(query, tenant, &[("taskId", &task), ("id", &id)])?,
                    ctx,
                )
                .await?,
        ),
        ListPushConfigs(task) => json(
            handler
                .list_task_push_notification_configs(
                    request_object(query, tenant, &[("taskId", &task)])?,
                    ctx,
                )
                .await?,
        ),
        DeletePushConfig(task, id) => {
            handler
                .delete_task_push_notification_config(
                    request_object(query, tenant, &[("taskId", &task), ("id", &id)])?,
                    ctx,
                )
                .await?;
            // `google.protobuf.Empty` as JSON, with 200: what the spec's "structurally
            // equivalent" JSON is, and what other SDKs' clients parse (a 204 breaks Python's).
            Ok(Outcome::Json(b"{}".to_vec()))
        }
        ExtendedCard => json(
            handler
                .get_extended_agent_card(request_object(query, tenant, &[])?, ctx)
                .await?,
        ),
    }
}

fn path_not_found(media_type: &'static str) -> Response {
    error_response(
        &A2aError::new(
            ErrorKind::MethodNotFound,
            "no A2A operation is served at this path",
        ),
        Some(StatusCode::NOT_FOUND),
        media_type,
    )
}

/// For a server without HTTP+JSON: every path but the card and the JSON-RPC endpoint.
pub(crate) async fn not_found(headers: HeaderMap) -> Response {
    path_not_found(common::response_media_type(&headers, A2A_JSON))
}

/// A path served for other methods only: 405, with `Allow` and the binding's error body.
fn wrong_method(allow: &'static str, media_type: &'static str) -> Response {
    let mut response = error_response(
        &A2aError::new(
            ErrorKind::InvalidRequest,
            format!("this path answers {allow} only"),
        ),
        Some(StatusCode::METHOD_NOT_ALLOWED),
        media_type,
    );
    response
        .headers_mut()
        .insert(http::header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// For the JSON-RPC endpoint, which takes POST only.
pub(crate) async fn post_only(headers: HeaderMap) -> Response {
    wrong_method("POST", common::response_media_type(&headers, common::JSON))
}

/// For the agent card, which is read with GET (HEAD is answered too).
pub(crate) async fn get_only(headers: HeaderMap) -> Response {
    wrong_method(
        "GET, HEAD",
        common::response_media_type(&headers, common::JSON),
    )
}

pub(crate) async fn handle(State(state): State<AppState>, request: Request<Body>) -> Response {
    let (parts, body) = request.into_parts();
    let media_type = common::response_media_type(&parts.headers, A2A_JSON);
    let error_response = |error: &A2aError, status| error_response(error, status, media_type);
    let prefix = state.config.rest_prefix.as_deref().unwrap_or("");
    let Some(path) = parts.uri.path().strip_prefix(prefix) else {
        return path_not_found(media_type);
    };
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let (tenant, operation) = match route(&parts.method, &segments) {
        Ok(found) => found,
        Err(RouteError::NotFound) => return path_not_found(media_type),
        Err(RouteError::MethodNotAllowed(allow)) => return wrong_method(allow, media_type),
        Err(RouteError::ReservedTenant) => {
            return error_response(&crate::handler::reserved_tenant_error(&segments[0]), None);
        }
    };
    let mut head = match Head::read(&state, &parts.headers, parts.uri.query(), &parts.extensions) {
        Ok(head) => head,
        Err(error) => return error_response(&error, None),
    };
    let (body, query) = match read_request(&state, &parts, &operation, &tenant, body).await {
        Ok(read) => read,
        Err((error, status)) => return error_response(&error, status),
    };
    let declared = body.declared_extensions();
    let observed = head.observe(&state, "http+json", operation.label(), &parts.headers);
    let (handler, ctx) = (&state.handler, &head.ctx);
    let outcome = observed
        .run(dispatch(handler, &tenant, operation, body, query, ctx))
        .await;
    let mut response = match outcome {
        Ok(Outcome::Json(bytes)) => (
            [(CONTENT_TYPE, HeaderValue::from_static(media_type))],
            bytes,
        )
            .into_response(),
        Ok(Outcome::Stream(events)) => sse::respond(&state, events, |event| event),
        Err(error) => error_response(&error, None),
    };
    if let Some(value) = head.activated_extensions(&state, &declared) {
        response.headers_mut().insert(EXTENSIONS_HEADER, value);
    }
    response
}

/// Reads what an operation takes from the request: the body (declared as JSON, within the
/// limits, no member repeated; a send's decoded at once) and the query's parameters. A
/// refusal is an error with the HTTP status it needs, if not its own.
async fn read_request(
    state: &AppState,
    parts: &http::request::Parts,
    operation: &Operation,
    tenant: &str,
    body: Body,
) -> Result<(RequestBody, Map<String, Value>), (A2aError, Option<StatusCode>)> {
    let has_body = parts.method == Method::POST;
    // A subscription changes nothing, so a bare POST (no body, no type) may open one.
    let may_omit_type = matches!(operation, Operation::Subscribe(_))
        && !parts.headers.contains_key(http::header::CONTENT_TYPE);
    if has_body && !may_omit_type {
        common::check_json_content_type(&parts.headers).map_err(|error| (error, None))?;
    }
    let bytes = common::read_body(body, state).await.map_err(|error| {
        let status = error.status();
        (error.into_error(), Some(status))
    })?;
    if has_body {
        common::refuse_repeated_members(&bytes).map_err(|(_, error)| (error, None))?;
    }
    let is_send = matches!(operation, Operation::Send | Operation::Stream);
    let body = match is_send.then(|| send_request_fast(&bytes, tenant)).flatten() {
        Some(request) => RequestBody::Send(Box::new(request)),
        None if has_body => RequestBody::Object(body_object(&bytes).map_err(|e| (e, None))?),
        None => RequestBody::Object(Map::new()),
    };
    let mut query = Map::new();
    for (name, raw) in query_map(parts.uri.query()).map_err(|e| (e, None))? {
        if name.eq_ignore_ascii_case(VERSION_HEADER) {
            continue;
        }
        let value = query_value(&name, &raw).map_err(|e| (e, None))?;
        query.insert(name, value);
    }
    Ok((body, query))
}
