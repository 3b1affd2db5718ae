//! Authentication at the door: every request but the public card's and CORS preflights must
//! meet the card's security requirements before any body is read. The caller it proves goes
//! into the request's extensions, where the bindings read it like any layer's.

use std::sync::Arc;

use a2a_protocol_types::A2aError;
use a2a_protocol_types::agent_card::AGENT_CARD_PATH;
use a2a_protocol_types::jsonrpc::JsonRpcId;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::header::WWW_AUTHENTICATE;
use http::{HeaderValue, Method, StatusCode};

use super::{AppState, common, jsonrpc, rest};
use crate::auth::{Authenticator, Refusal};
use crate::executor::CallerIdentity;

/// How long a client refused because credentials could not be checked should wait.
const RECHECK_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// The authenticator as the router uses it: ready, or why it cannot be (checked once, when
/// the router is built, so a misconfigured server refuses every request instead of letting
/// them through).
#[derive(Clone)]
pub(crate) enum Gate {
    Open,
    Checking(Arc<Authenticator>),
    Misconfigured(Arc<str>),
}

impl Gate {
    pub(crate) fn new(
        auth: Option<&Arc<Authenticator>>,
        card: &a2a_protocol_types::AgentCard,
        client_certificates: bool,
    ) -> Self {
        match auth {
            None => Gate::Open,
            Some(auth) => match auth.check_with(card, client_certificates) {
                Ok(()) => Gate::Checking(Arc::clone(auth)),
                Err(problem) => {
                    tracing::error!(%problem, "authentication is misconfigured; refusing every request");
                    Gate::Misconfigured(problem.into())
                }
            },
        }
    }
}

pub(crate) async fn gate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let auth = match &state.gate {
        Gate::Open => return next.run(request).await,
        Gate::Checking(auth) => auth,
        Gate::Misconfigured(problem) => {
            let (parts, _) = request.into_parts();
            let error = A2aError::internal(format!("authentication is misconfigured: {problem}"));
            return refuse(&state, &parts, &error, &[]);
        }
    };
    let public = request.method() == Method::OPTIONS || request.uri().path() == AGENT_CARD_PATH;
    // A layer in front that authenticated the caller already is trusted: only the server's
    // own code can put an identity in the extensions.
    if public || request.extensions().get::<CallerIdentity>().is_some() {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let card = state.handler.agent_card();
    match auth.authenticate(card, &parts).await {
        Ok(caller) => {
            if let Some(caller) = caller {
                parts.extensions.insert(caller);
            }
            next.run(Request::from_parts(parts, body)).await
        }
        Err(Refusal::Unauthenticated {
            message,
            challenges,
        }) => refuse(
            &state,
            &parts,
            &A2aError::unauthenticated(message),
            &challenges,
        ),
        Err(Refusal::Forbidden {
            message,
            challenges,
        }) => refuse(
            &state,
            &parts,
            &A2aError::permission_denied(message),
            &challenges,
        ),
        Err(Refusal::Unavailable(message)) => refuse(
            &state,
            &parts,
            &A2aError::resource_exhausted(message, RECHECK_AFTER),
            &[],
        ),
    }
}

/// The refusal in the binding the request was meant for, with its challenges.
fn refuse(
    state: &AppState,
    parts: &http::request::Parts,
    error: &A2aError,
    challenges: &[String],
) -> Response {
    #[cfg(feature = "grpc")]
    if super::grpc::is_grpc(&parts.headers) {
        // A gRPC client reads a status, not an HTTP error: the same code and details the
        // service itself would answer.
        let mut response =
            a2a_protocol_grpc::status::to_status(error).into_http::<axum::body::Body>();
        for challenge in challenges {
            if let Ok(value) = HeaderValue::from_str(challenge) {
                response.headers_mut().append(WWW_AUTHENTICATE, value);
            }
        }
        return response;
    }
    let jsonrpc = parts.method == Method::POST
        && state.config.jsonrpc_path.as_deref() == Some(parts.uri.path());
    let status =
        StatusCode::from_u16(error.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = if jsonrpc {
        jsonrpc::error_response(JsonRpcId::Null, error, status)
    } else {
        let media_type = common::response_media_type(&parts.headers, common::A2A_JSON);
        rest::error_response(error, None, media_type)
    };
    for challenge in challenges {
        if let Ok(value) = HeaderValue::from_str(challenge) {
            response.headers_mut().append(WWW_AUTHENTICATE, value);
        }
    }
    response
}
