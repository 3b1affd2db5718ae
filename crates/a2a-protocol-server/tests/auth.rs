//! Authentication that follows the card, and callers owning their tasks: every scheme with
//! missing, wrong and valid credentials on both bindings; another caller's task invisible to
//! every operation on every store; the extended card for authenticated callers only; key
//! quotas per caller.

mod common;

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::auth::{
    Algorithm, Authenticator, DecodingKey, JwtVerifier, StaticCredentials, Validation,
};
use a2a_protocol_server::store::{InMemoryStoreConfig, InMemoryTaskStore};
use a2a_protocol_server::{A2aServer, RequestHandler, ServerConfig};
use a2a_protocol_types::AgentCard;
use a2a_protocol_types::security::{
    ApiKeySecurityScheme, HttpAuthSecurityScheme, MutualTlsSecurityScheme, SecurityRequirement,
    SecurityScheme, StringList,
};
use common::stores::all_stores;
use common::*;
use serde_json::{Value, json};

const ALICE_KEY: &str = "alice-key-5b0e9c2d41f7";
const BOB_KEY: &str = "bob-key-93d1a7c4e0b2";
const HMAC_SECRET: &[u8] = b"a test secret of at least 32 bytes!!";
const ISSUER: &str = "https://login.example.test";

/// How a test presents a credential.
#[derive(Clone, Copy, Debug)]
enum Place {
    Header(&'static str),
    Query(&'static str),
    Cookie(&'static str),
    Bearer,
}

impl Place {
    fn apply(self, request: reqwest::RequestBuilder, credential: &str) -> reqwest::RequestBuilder {
        match self {
            Place::Header(name) => request.header(name, credential),
            Place::Query(name) => request.query(&[(name, credential)]),
            Place::Cookie(name) => {
                request.header("cookie", format!("theme=dark; {name}={credential}"))
            }
            Place::Bearer => request.bearer_auth(credential),
        }
    }

    /// The credential as a header (gRPC metadata); `None` in the query, which gRPC lacks.
    fn header(self, credential: &str) -> Option<(String, String)> {
        match self {
            Place::Header(name) => Some((name.to_owned(), credential.to_owned())),
            Place::Query(_) => None,
            Place::Cookie(name) => {
                Some(("cookie".into(), format!("theme=dark; {name}={credential}")))
            }
            Place::Bearer => Some(("authorization".into(), format!("Bearer {credential}"))),
        }
    }
}

/// Calls `method` with `credential` where `place` says, on any binding.
async fn call_placed(
    binding: Binding,
    base: &str,
    method: &str,
    params: Value,
    place: Place,
    credential: &str,
) -> Result<Value, WireError> {
    if binding != Binding::Grpc {
        return call_shaped(binding, base, method, params, |r| {
            place.apply(r, credential)
        })
        .await;
    }
    let (name, value) = place.header(credential).expect("a place gRPC can carry");
    call_with(binding, base, method, params, &[(&name, &value)]).await
}

fn api_key(location: &str, name: &str) -> SecurityScheme {
    SecurityScheme::ApiKey(ApiKeySecurityScheme {
        description: None,
        location: location.into(),
        name: name.into(),
    })
}

fn bearer_scheme() -> SecurityScheme {
    SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
        description: None,
        scheme: "Bearer".into(),
        bearer_format: Some("JWT".into()),
    })
}

fn oauth2_scheme() -> SecurityScheme {
    serde_json::from_value(
        json!({"oauth2SecurityScheme": {"flows": {"clientCredentials": {
            "tokenUrl": "https://login.example.test/token",
            "scopes": {"tasks:read": "read tasks", "tasks:write": "send messages"}
        }}}}),
    )
    .expect("an OAuth 2.0 scheme")
}

/// A card requiring `scheme` (named `name`) with `scopes`.
fn card_requiring(name: &str, scheme: SecurityScheme, scopes: &[&str]) -> AgentCard {
    let mut card = EchoAgent::card();
    card.security_schemes.insert(name.into(), scheme);
    card.security_requirements.push(SecurityRequirement {
        schemes: [(
            name.to_owned(),
            StringList {
                list: scopes.iter().map(|s| (*s).to_owned()).collect(),
            },
        )]
        .into(),
    });
    card
}

fn keys() -> StaticCredentials {
    StaticCredentials::new()
        .with_credential(ALICE_KEY, "alice")
        .with_credential(BOB_KEY, "bob")
}

fn jwt_validation() -> Validation {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.set_issuer(&[ISSUER]);
    validation
}

/// A signed JWT for `sub` with `scope`, valid for an hour (or expired an hour ago).
fn jwt(sub: &str, scope: &str, expired: bool, kid: Option<&str>) -> String {
    let now = chrono::Utc::now().timestamp();
    let exp = if expired { now - 3600 } else { now + 3600 };
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(
        &header,
        &json!({"sub": sub, "iss": ISSUER, "exp": exp, "scope": scope}),
        &jsonwebtoken::EncodingKey::from_secret(HMAC_SECRET),
    )
    .expect("signed")
}

/// Serves a JWKS holding the test's HMAC key as `kid`; the URL, and a handle that stops it.
async fn serve_jwks(kid: &str) -> (String, tokio::task::JoinHandle<()>) {
    use base64::Engine as _;
    let k = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(HMAC_SECRET);
    let set = json!({"keys": [{"kty": "oct", "kid": kid, "alg": "HS256", "k": k}]});
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let set = set.clone();
            async move { axum::Json(set) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/jwks.json", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, task)
}

/// A server for `card` whose scheme `name` is checked by `verifier`.
async fn serve_authenticated(
    card: AgentCard,
    name: &str,
    verifier: impl a2a_protocol_server::auth::CredentialVerifier,
    handler: a2a_protocol_server::RequestHandlerBuilder,
) -> TestServer {
    let handler = handler.with_agent_card(card).build();
    let config = ServerConfig::default()
        .with_authentication(Authenticator::new().with_verifier(name, verifier));
    serve_with(handler, config).await
}

/// One scheme under test: the server, where the credential goes, a valid credential for
/// alice and a wrong one.
struct SchemeCase {
    name: &'static str,
    server: TestServer,
    place: Place,
    valid: String,
    wrong: String,
}

async fn scheme_cases() -> (Vec<SchemeCase>, tokio::task::JoinHandle<()>) {
    let builder = || RequestHandler::builder(EchoAgent::new());
    let (jwks_url, jwks) = serve_jwks("k-2026").await;
    let mut cases = Vec::new();
    for (name, location, place) in [
        ("api key in a header", "header", Place::Header("X-API-Key")),
        ("api key in the query", "query", Place::Query("api_key")),
        ("api key in a cookie", "cookie", Place::Cookie("a2a_key")),
    ] {
        let key_name = match place {
            Place::Header(n) | Place::Query(n) | Place::Cookie(n) => n,
            Place::Bearer => unreachable!(),
        };
        cases.push(SchemeCase {
            name,
            server: serve_authenticated(
                card_requiring("key", api_key(location, key_name), &[]),
                "key",
                keys(),
                builder(),
            )
            .await,
            place,
            valid: ALICE_KEY.into(),
            wrong: "not-a-key-anyone-issued".into(),
        });
    }
    cases.push(SchemeCase {
        name: "HTTP bearer with a custom verifier",
        server: serve_authenticated(
            card_requiring("bearer", bearer_scheme(), &[]),
            "bearer",
            keys(),
            builder(),
        )
        .await,
        place: Place::Bearer,
        valid: ALICE_KEY.into(),
        wrong: BOB_KEY.replace('b', "c"),
    });
    cases.push(SchemeCase {
        name: "JWT against a static key",
        server: serve_authenticated(
            card_requiring("bearer", bearer_scheme(), &[]),
            "bearer",
            JwtVerifier::new(DecodingKey::from_secret(HMAC_SECRET), jwt_validation()),
            builder(),
        )
        .await,
        place: Place::Bearer,
        valid: jwt("alice", "", false, None),
        wrong: jwt("alice", "", true, None),
    });
    cases.push(SchemeCase {
        name: "JWT against a JWKS",
        server: serve_authenticated(
            card_requiring("oauth", oauth2_scheme(), &[]),
            "oauth",
            JwtVerifier::from_jwks_url(&jwks_url, jwt_validation()),
            builder(),
        )
        .await,
        place: Place::Bearer,
        valid: jwt("alice", "", false, Some("k-2026")),
        wrong: jwt("alice", "", false, Some("k-unknown")),
    });
    (cases, jwks)
}

fn assert_unauthenticated(error: &WireError, binding: Binding, what: &str) {
    assert_status(error, binding, 401, tonic::Code::Unauthenticated);
    assert_eq!(error.reason, "UNAUTHENTICATED", "{what} {binding:?}");
    if binding == Binding::JsonRpc {
        assert_eq!(error.code, Some(-32000), "{what}");
    }
}

#[tokio::test]
async fn every_scheme_refuses_missing_and_wrong_credentials_and_admits_valid_ones() {
    let (cases, _jwks) = scheme_cases().await;
    for case in &cases {
        for binding in BINDINGS {
            let what = case.name;
            // Missing.
            let error = call(binding, &case.server.base, "ListTasks", json!({}))
                .await
                .expect_err("no credential");
            assert_unauthenticated(&error, binding, what);
            if binding == Binding::Grpc && case.place.header("").is_none() {
                continue; // A credential in the query has no place in a gRPC call.
            }
            // Wrong: refused, and the credential is not echoed back.
            let place = case.place;
            let error = call_placed(
                binding,
                &case.server.base,
                "ListTasks",
                json!({}),
                place,
                &case.wrong,
            )
            .await
            .expect_err("a wrong credential");
            assert_unauthenticated(&error, binding, what);
            assert!(
                !error.body.to_string().contains(&case.wrong)
                    && !error.message.contains(&case.wrong),
                "{what}: the refusal echoes the credential"
            );
            // Valid: every operation goes through, as alice.
            let sent = call_placed(
                binding,
                &case.server.base,
                "SendMessage",
                send_params(&uuid::Uuid::new_v4().to_string(), "hello"),
                place,
                &case.valid,
            )
            .await
            .unwrap_or_else(|e| panic!("{what} {binding:?}: {}", e.body));
            let id = task_of(&sent)["id"].as_str().expect("task id").to_owned();
            let task = call_placed(
                binding,
                &case.server.base,
                "GetTask",
                json!({"id": id}),
                place,
                &case.valid,
            )
            .await
            .unwrap_or_else(|e| panic!("{what} {binding:?}: {}", e.body));
            assert_eq!(task["id"], id.as_str(), "{what}");
        }
    }
}

#[tokio::test]
async fn a_refusal_says_how_to_authenticate_and_reads_no_body() {
    let server = serve_authenticated(
        card_requiring("key", api_key("header", "X-API-Key"), &[]),
        "key",
        keys(),
        RequestHandler::builder(EchoAgent::new()),
    )
    .await;
    let client = client();
    for (url, body) in [
        (
            format!("{}/", server.base),
            json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}),
        ),
        (
            format!("{}/message:send", server.base),
            send_params("m-1", "hi"),
        ),
    ] {
        let response = client
            .post(&url)
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 401, "{url}");
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert_eq!(
            challenge, "ApiKey realm=\"a2a\", in=\"header\", name=\"X-API-Key\"",
            "{url}"
        );
        // The body of an unauthenticated request is never read, so the connection closes.
        assert_eq!(
            response.headers().get("connection").map(|v| v.as_bytes()),
            Some(&b"close"[..]),
            "{url}"
        );
    }
    // The public card stays public.
    let card = client
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("sent");
    assert_eq!(card.status(), 200);
}

#[tokio::test]
async fn a_token_without_the_required_scope_is_forbidden() {
    let server = serve_authenticated(
        card_requiring("oauth", oauth2_scheme(), &["tasks:write"]),
        "oauth",
        JwtVerifier::new(DecodingKey::from_secret(HMAC_SECRET), jwt_validation()),
        RequestHandler::builder(EchoAgent::new()),
    )
    .await;
    let reader = jwt("alice", "tasks:read", false, None);
    let writer = jwt("alice", "tasks:read tasks:write", false, None);
    for binding in BINDINGS {
        let error = list_as_bearer(binding, &server.base, &reader)
            .await
            .expect_err("lacks a scope");
        assert_status(&error, binding, 403, tonic::Code::PermissionDenied);
        assert_eq!(error.reason, "PERMISSION_DENIED", "{binding:?}");
        assert!(error.message.contains("tasks:write"), "{}", error.message);
        list_as_bearer(binding, &server.base, &writer)
            .await
            .expect("has the scope");
    }
    let response = client()
        .get(format!("{}/tasks", server.base))
        .header("A2A-Version", "1.0")
        .bearer_auth(&reader)
        .send()
        .await
        .expect("sent");
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .unwrap_or_default();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"tasks:write\""), "{challenge}");
}

#[tokio::test]
async fn an_unreachable_key_set_answers_503_not_401() {
    // A port nothing listens on: the token may be good, the keys just cannot be had.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/jwks.json", closed.local_addr().expect("addr"));
    drop(closed);
    let server = serve_authenticated(
        card_requiring("oauth", oauth2_scheme(), &[]),
        "oauth",
        JwtVerifier::from_jwks_url(url, jwt_validation()),
        RequestHandler::builder(EchoAgent::new()),
    )
    .await;
    let token = jwt("alice", "", false, Some("k-1"));
    for binding in BINDINGS {
        let error = list_as_bearer(binding, &server.base, &token)
            .await
            .expect_err("cannot check");
        assert_status(&error, binding, 503, tonic::Code::Unavailable);
        assert!(error.retry_after.is_some(), "{binding:?}");
    }
}

/// `ListTasks` with `token` as the bearer token.
async fn list_as_bearer(binding: Binding, base: &str, token: &str) -> Result<Value, WireError> {
    let authorization = format!("Bearer {token}");
    call_with(
        binding,
        base,
        "ListTasks",
        json!({}),
        &[("authorization", &authorization)],
    )
    .await
}

/// Calls `method` as the caller holding `key` (API key in `X-API-Key`).
async fn as_caller(
    binding: Binding,
    base: &str,
    key: &str,
    method: &str,
    params: Value,
) -> Result<Value, WireError> {
    call_with(binding, base, method, params, &[("X-API-Key", key)]).await
}

#[tokio::test]
async fn another_callers_task_is_invisible_to_every_operation_on_every_store() {
    for under_test in all_stores().await {
        let name = under_test.name;
        let server = serve_authenticated(
            card_requiring("key", api_key("header", "X-API-Key"), &[]),
            "key",
            keys(),
            RequestHandler::builder(EchoAgent::slow(Duration::from_secs(30)))
                .with_store(Arc::clone(&under_test.store)),
        )
        .await;
        for binding in BINDINGS {
            // Alice starts a task that keeps working, so it can be canceled and followed.
            let mut params = send_params(&uuid::Uuid::new_v4().to_string(), "alice's secret");
            params["configuration"] = json!({"returnImmediately": true});
            let started = as_caller(binding, &server.base, ALICE_KEY, "SendMessage", params)
                .await
                .unwrap_or_else(|e| panic!("{name}: {}", e.body));
            let id = task_of(&started)["id"].as_str().expect("id").to_owned();

            // Bob sees nothing of it, whatever he tries.
            for (method, params) in [
                ("GetTask", json!({"id": id})),
                ("CancelTask", json!({"id": id})),
                ("SendMessage", {
                    let mut p = send_params(&uuid::Uuid::new_v4().to_string(), "bob's reply");
                    p["message"]["taskId"] = json!(id);
                    p
                }),
            ] {
                let error = as_caller(binding, &server.base, BOB_KEY, method, params)
                    .await
                    .expect_err("not bob's");
                assert_eq!(
                    error.reason, "TASK_NOT_FOUND",
                    "{name} {binding:?} {method}"
                );
            }
            if binding == Binding::Grpc {
                let refused = common::grpc::open_with(
                    &server.base,
                    "SubscribeToTask",
                    json!({"id": id}),
                    &[("x-api-key", BOB_KEY)],
                )
                .await;
                let Err(error) = refused else {
                    panic!("{name} {binding:?}: bob subscribes to alice's task");
                };
                assert_eq!(error.reason, "TASK_NOT_FOUND", "{name} {binding:?}");
                assert!(!format!("{error:?}").contains("alice's secret"));
            } else {
                let response = send_streaming_shaped(
                    binding,
                    &server.base,
                    "SubscribeToTask",
                    json!({"id": id}),
                    |r| r.header("X-API-Key", BOB_KEY),
                )
                .await;
                let status = response.status().as_u16();
                let body = response.text().await.expect("body");
                assert!(
                    body.contains("TASK_NOT_FOUND") && !body.contains("alice's secret"),
                    "{name} {binding:?} subscribe: {status} {body}"
                );
            }
            let listed = as_caller(binding, &server.base, BOB_KEY, "ListTasks", json!({}))
                .await
                .expect("bob lists");
            assert!(
                !listed.to_string().contains(&id),
                "{name} {binding:?}: bob lists alice's task"
            );

            // Alice sees and cancels her own.
            let listed = as_caller(binding, &server.base, ALICE_KEY, "ListTasks", json!({}))
                .await
                .expect("alice lists");
            assert!(listed.to_string().contains(&id), "{name} {binding:?}");
            let canceled = as_caller(
                binding,
                &server.base,
                ALICE_KEY,
                "CancelTask",
                json!({"id": id}),
            )
            .await
            .unwrap_or_else(|e| panic!("{name} {binding:?}: {}", e.body));
            assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
            // Once settled (read from the store, not live state), still invisible to bob.
            let error = as_caller(binding, &server.base, BOB_KEY, "GetTask", json!({"id": id}))
                .await
                .expect_err("not bob's");
            assert_eq!(error.reason, "TASK_NOT_FOUND", "{name} {binding:?} settled");
        }
        drop(server);
        under_test.cleanup().await;
    }
}

#[tokio::test]
async fn the_extended_card_needs_authentication_and_may_differ_per_caller() {
    let server = serve_authenticated(
        card_requiring("key", api_key("header", "X-API-Key"), &[]),
        "key",
        keys(),
        RequestHandler::builder(EchoAgent::new())
            .with_extended_agent_card(AgentCard::new("Echo+", "For partners.", "1.0.0"))
            .with_extended_card_tailor(|caller, mut card| {
                card.description = format!("For {}.", caller.0);
                card
            }),
    )
    .await;
    for binding in BINDINGS {
        let error = call(binding, &server.base, "GetExtendedAgentCard", json!({}))
            .await
            .expect_err("anonymous");
        assert_unauthenticated(&error, binding, "extended card");
        let error = as_caller(
            binding,
            &server.base,
            "wrong-key-000000",
            "GetExtendedAgentCard",
            json!({}),
        )
        .await
        .expect_err("wrong key");
        assert_unauthenticated(&error, binding, "extended card");
        for (key, who) in [(ALICE_KEY, "alice"), (BOB_KEY, "bob")] {
            let card = as_caller(
                binding,
                &server.base,
                key,
                "GetExtendedAgentCard",
                json!({}),
            )
            .await
            .expect("authenticated");
            assert_eq!(card["description"], format!("For {who}."));
        }
    }
}

#[tokio::test]
async fn a_caller_at_its_key_quota_gets_503_while_another_caller_goes_on() {
    for binding in BINDINGS {
        // A server per binding: each caller's quota starts empty.
        let store = InMemoryTaskStore::with_config(
            InMemoryStoreConfig::default()
                .with_max_idempotency_keys(8)
                .with_max_idempotency_keys_per_holder(2),
        );
        let server = serve_authenticated(
            card_requiring("key", api_key("header", "X-API-Key"), &[]),
            "key",
            keys(),
            RequestHandler::builder(EchoAgent::new()).with_store(Arc::new(store)),
        )
        .await;
        let mut refused = None;
        for _ in 0..6 {
            let params = keyed_params(&uuid::Uuid::new_v4().to_string(), "hi", &key());
            if let Err(error) =
                as_caller(binding, &server.base, ALICE_KEY, "SendMessage", params).await
            {
                refused = Some(error);
                break;
            }
        }
        let refused = refused.expect("alice reaches her quota");
        assert_status(&refused, binding, 503, tonic::Code::Unavailable);
        assert!(refused.retry_after.is_some());
        let params = keyed_params(&uuid::Uuid::new_v4().to_string(), "hi", &key());
        as_caller(binding, &server.base, BOB_KEY, "SendMessage", params)
            .await
            .unwrap_or_else(|e| panic!("{binding:?}: bob is held back: {}", e.body));
    }
}

#[tokio::test]
async fn a_card_and_verifiers_that_do_not_fit_keep_the_server_from_starting() {
    let cases: Vec<(AgentCard, Authenticator, &str)> = vec![
        (
            EchoAgent::card(),
            Authenticator::new().with_verifier("key", keys()),
            "securityRequirements",
        ),
        (
            card_requiring("key", api_key("header", "X-API-Key"), &[]),
            Authenticator::new(),
            "no verifier",
        ),
        (
            card_requiring(
                "mtls",
                SecurityScheme::MutualTls(MutualTlsSecurityScheme { description: None }),
                &[],
            ),
            Authenticator::new().with_verifier("mtls", keys()),
            "mutual TLS",
        ),
        (
            card_requiring("key", api_key("body", "key"), &[]),
            Authenticator::new().with_verifier("key", keys()),
            "location",
        ),
    ];
    for (card, auth, expected) in cases {
        let handler = RequestHandler::builder(EchoAgent::new())
            .with_agent_card(card)
            .build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let error = A2aServer::new(handler)
            .with_config(ServerConfig::default().with_authentication(auth))
            .serve(listener, std::future::pending())
            .await
            .expect_err("refuses to start");
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
        assert!(error.to_string().contains(expected), "{error}");
    }
}
