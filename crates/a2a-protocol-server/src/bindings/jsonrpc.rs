//! The JSON-RPC 2.0 binding (spec §9): one POST endpoint, PascalCase methods, SSE for streams.
//! Errors answer HTTP 200 with a JSON-RPC error object, except a retryable refusal (503 with
//! `Retry-After`) and an oversized body (413).

use a2a_protocol_types::extensions::EXTENSIONS_HEADER;
use a2a_protocol_types::jsonrpc::{JSONRPC_VERSION, JsonRpcId, JsonRpcResponse, methods};
use a2a_protocol_types::{A2aError, ErrorKind};
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, Request, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use super::call::Head;
use super::common::{self, JSON};
use super::envelope::{Envelope, Params};
use super::objects::{ObjectOnly, is_array};
use super::{AppState, sse};
use crate::handler::{CallContext, EventStream, RequestHandler};
use crate::telemetry;

pub(super) fn error_response(id: JsonRpcId, error: &A2aError, status: StatusCode) -> Response {
    // Refusals a client, proxy or browser must see at the HTTP level carry their status on
    // this binding too: overload (503 with Retry-After) and authentication (401, 403).
    let status = match error.kind {
        kind if kind.is_retryable() => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorKind::PermissionDenied => StatusCode::FORBIDDEN,
        _ => status,
    };
    let body = JsonRpcResponse::<Value>::error(id, error.to_jsonrpc());
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(value) = common::retry_after(error) {
        response.headers_mut().insert(RETRY_AFTER, value);
    }
    response
}

/// Decodes a method's params (absent params read as `{}`) into its own type. A2A methods take
/// named params: an object, never an array.
fn params<T: DeserializeOwned>(input: Params) -> Result<T, A2aError> {
    let raw = input.text();
    let text = raw.as_deref().map_or("{}", RawValue::get);
    if is_array(text.as_bytes()) {
        let problem = "must be an object of named parameters; positional (array) params are \
                       not supported";
        return Err(A2aError::invalid_params(format!("params {problem}"))
            .with_field_violation("params", problem));
    }
    serde_json::from_str::<ObjectOnly<T>>(text)
        .map(|ObjectOnly(params)| params)
        .map_err(|error| {
            A2aError::invalid_params(format!("params are invalid: {error}"))
                .with_field_violation("params", error.to_string())
        })
}

/// The id of a request that could not be read as a whole, if its `id` member is usable.
fn salvage_id(value: &Value) -> JsonRpcId {
    value
        .get("id")
        .and_then(|id| serde_json::from_value::<JsonRpcId>(id.clone()).ok())
        .unwrap_or(JsonRpcId::Null)
}

enum Outcome {
    /// The whole JSON-RPC response, serialized.
    Unary(Vec<u8>),
    Stream(EventStream),
}

/// The whole response to `id`, serialized in one pass into a buffer sized for a typical task.
fn respond<T: serde::Serialize>(id: &JsonRpcId, value: T) -> Result<Outcome, A2aError> {
    let mut body = Vec::with_capacity(2048);
    serde_json::to_writer(&mut body, &JsonRpcResponse::success(id.clone(), value))
        .map(|()| Outcome::Unary(body))
        .map_err(|_| A2aError::internal("the result could not be serialized"))
}

/// A send's typed request, with the extensions its message declares noted for the response's
/// `A2A-Extensions` header.
fn send_params(
    input: Params,
    declared: &mut Vec<String>,
) -> Result<a2a_protocol_types::SendMessageRequest, A2aError> {
    let request = match input {
        Params::Send(request) => *request,
        raw => params(raw)?,
    };
    declared.clone_from(request.message.extensions.as_ref().unwrap_or(&Vec::new()));
    Ok(request)
}

async fn dispatch(
    handler: &RequestHandler,
    id: &JsonRpcId,
    method: &str,
    input: Params,
    ctx: &CallContext,
    declared: &mut Vec<String>,
) -> Result<Outcome, A2aError> {
    match method {
        methods::SEND_MESSAGE => respond(
            id,
            handler
                .send_message_answer(send_params(input, declared)?, ctx)
                .await?,
        ),
        methods::SEND_STREAMING_MESSAGE => Ok(Outcome::Stream(
            handler
                .send_streaming_message(send_params(input, declared)?, ctx)
                .await?,
        )),
        methods::GET_TASK => respond(id, handler.get_task(params(input)?, ctx).await?),
        methods::LIST_TASKS => respond(id, handler.list_tasks(params(input)?, ctx).await?),
        methods::CANCEL_TASK => respond(id, handler.cancel_task(params(input)?, ctx).await?),
        methods::SUBSCRIBE_TO_TASK => Ok(Outcome::Stream(
            handler.subscribe_to_task(params(input)?, ctx).await?,
        )),
        methods::CREATE_TASK_PUSH_NOTIFICATION_CONFIG => respond(
            id,
            handler
                .create_task_push_notification_config(params(input)?, ctx)
                .await?,
        ),
        methods::GET_TASK_PUSH_NOTIFICATION_CONFIG => respond(
            id,
            handler
                .get_task_push_notification_config(params(input)?, ctx)
                .await?,
        ),
        methods::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => respond(
            id,
            handler
                .list_task_push_notification_configs(params(input)?, ctx)
                .await?,
        ),
        methods::DELETE_TASK_PUSH_NOTIFICATION_CONFIG => {
            handler
                .delete_task_push_notification_config(params(input)?, ctx)
                .await?;
            respond(id, serde_json::Map::new())
        }
        methods::GET_EXTENDED_AGENT_CARD => respond(
            id,
            handler.get_extended_agent_card(params(input)?, ctx).await?,
        ),
        other => Err(A2aError::new(
            ErrorKind::MethodNotFound,
            format!(
                "method {:?} does not exist; A2A methods are {}",
                other.chars().take(64).collect::<String>(),
                methods::ALL.join(", ")
            ),
        )),
    }
}

pub(crate) async fn handle(State(state): State<AppState>, request: Request<Body>) -> Response {
    let (parts, body) = request.into_parts();
    let mut head = match Head::read(&state, &parts.headers, parts.uri.query(), &parts.extensions) {
        Ok(head) => head,
        Err(error) => return error_response(JsonRpcId::Null, &error, StatusCode::OK),
    };
    let (id, request) = match read_request(&state, &parts.headers, body).await {
        Ok(read) => read,
        Err(refusal) => return *refusal,
    };
    let operation = telemetry::operation_label(&request.method);
    let observed = head.observe(&state, "jsonrpc", operation, &parts.headers);
    let mut declared = Vec::new();
    let (handler, ctx) = (&state.handler, &head.ctx);
    let outcome = observed
        .run(dispatch(
            handler,
            &id,
            &request.method,
            request.params,
            ctx,
            &mut declared,
        ))
        .await;
    let mut response = match outcome {
        Ok(Outcome::Unary(body)) => {
            ([(CONTENT_TYPE, HeaderValue::from_static(JSON))], body).into_response()
        }
        Ok(Outcome::Stream(events)) => sse::respond(&state, events, move |event| {
            JsonRpcResponse::success(id.clone(), event)
        }),
        Err(error) => error_response(id, &error, StatusCode::OK),
    };
    if let Some(value) = head.activated_extensions(&state, &declared) {
        response.headers_mut().insert(EXTENSIONS_HEADER, value);
    }
    response
}

/// Reads the request object: a JSON body, within the limits, with no member repeated, that is
/// a JSON-RPC 2.0 request with an id. A refusal is the whole answer, with the request's id
/// when it has a usable one.
async fn read_request(
    state: &AppState,
    headers: &http::HeaderMap,
    body: Body,
) -> Result<(JsonRpcId, Envelope), Box<Response>> {
    let refuse = |id, error: &A2aError, status| Box::new(error_response(id, error, status));
    common::check_json_content_type(headers)
        .map_err(|error| refuse(JsonRpcId::Null, &error, StatusCode::OK))?;
    let bytes = common::read_body(body, state).await.map_err(|error| {
        let status = error.status();
        refuse(JsonRpcId::Null, &error.into_error(), status)
    })?;
    if let Err((depth, mut error)) = common::refuse_repeated_members(&bytes) {
        // A repeated member of the request object itself makes it no request at all.
        if depth == 1 {
            error.kind = ErrorKind::InvalidRequest;
        }
        let id = serde_json::from_slice::<Value>(&bytes)
            .map(|value| salvage_id(&value))
            .unwrap_or(JsonRpcId::Null);
        return Err(refuse(id, &error, StatusCode::OK));
    }
    let request = Envelope::read(&bytes).map_err(|error| {
        // Only on failure is the body read a second time, to tell malformed JSON apart from
        // JSON that is not a request, and to answer with the request's id when it has one.
        let (id, error) = match serde_json::from_slice::<Value>(&bytes) {
            Err(parse_error) => (
                JsonRpcId::Null,
                A2aError::new(
                    ErrorKind::ParseError,
                    format!("the body is not valid JSON: {parse_error}"),
                ),
            ),
            Ok(Value::Array(_)) => (
                JsonRpcId::Null,
                A2aError::new(
                    ErrorKind::InvalidRequest,
                    "JSON-RPC batches are not supported; send each request on its own",
                ),
            ),
            Ok(value) => (
                salvage_id(&value),
                A2aError::new(
                    ErrorKind::InvalidRequest,
                    format!("not a JSON-RPC 2.0 request object: {error}"),
                ),
            ),
        };
        refuse(id, &error, StatusCode::OK)
    })?;
    match (&request.id, request.jsonrpc == JSONRPC_VERSION) {
        (Some(id), true) => Ok((id.clone(), request)),
        (id, _) => {
            let error = A2aError::new(
                ErrorKind::InvalidRequest,
                "a request needs \"jsonrpc\": \"2.0\" and an id (notifications are not supported)",
            );
            Err(refuse(
                id.clone().unwrap_or(JsonRpcId::Null),
                &error,
                StatusCode::OK,
            ))
        }
    }
}
