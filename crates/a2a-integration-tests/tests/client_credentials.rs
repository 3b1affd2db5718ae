//! Client credentials chosen from the card: each API key place and bearer tokens from a
//! refreshing source reach our authenticating server on both bindings; an agent that asks for
//! nothing gets nothing; a redirect to another origin never carries a credential there.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use a2a_integration_tests::support::CountingAgent;
use a2a_protocol_client::auth::{Credentials, TokenSource};
use a2a_protocol_client::{Binding, ClientBuilder, ClientError};
use a2a_protocol_server::auth::{Authenticator, StaticCredentials};
use a2a_protocol_server::{A2aServer, RequestHandler, ServerConfig};
use a2a_protocol_types::security::{
    ApiKeySecurityScheme, HttpAuthSecurityScheme, SecurityRequirement, SecurityScheme,
};
use a2a_protocol_types::{AgentCard, ErrorKind, ListTasksRequest, Message, SendMessageRequest};

const BINDINGS: [Binding; 2] = [Binding::JsonRpc, Binding::HttpJson];
const KEY: &str = "k-3f9a0c71d2b84e56";

fn requiring(name: &str, scheme: SecurityScheme) -> AgentCard {
    let mut card = AgentCard::new("Guarded", "Needs a credential.", "1.0.0");
    card.security_schemes.insert(name.into(), scheme);
    card.security_requirements.push(SecurityRequirement {
        schemes: [(name.to_owned(), Default::default())].into(),
    });
    card
}

fn api_key(location: &str, name: &str) -> SecurityScheme {
    SecurityScheme::ApiKey(ApiKeySecurityScheme {
        description: None,
        location: location.into(),
        name: name.into(),
    })
}

/// Our server, requiring `card`'s scheme `name`, accepting `secrets`; its base URL.
async fn serve_guarded(card: AgentCard, name: &str, secrets: StaticCredentials) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let handler = RequestHandler::builder(CountingAgent::default())
        .with_agent_card(card)
        .build();
    let server = A2aServer::new(handler).with_config(
        ServerConfig::default()
            .with_public_url(&url)
            .with_authentication(Authenticator::new().with_verifier(name, secrets)),
    );
    tokio::spawn(server.serve(listener, std::future::pending()));
    url
}

#[tokio::test]
async fn an_api_key_goes_where_the_card_says_on_both_bindings() {
    for (location, name) in [
        ("header", "X-API-Key"),
        ("query", "api_key"),
        ("cookie", "key"),
    ] {
        let url = serve_guarded(
            requiring("key", api_key(location, name)),
            "key",
            StaticCredentials::new().with_credential(KEY, "alice"),
        )
        .await;
        for (sent, binding) in BINDINGS.into_iter().enumerate() {
            let builder = || ClientBuilder::discover(&url);
            let anonymous = builder()
                .await
                .expect("card")
                .with_preferred_bindings(vec![binding])
                .build()
                .expect("client");
            let error = anonymous
                .list_tasks(ListTasksRequest::default())
                .await
                .expect_err("no credential");
            assert_eq!(
                error.kind(),
                Some(ErrorKind::Unauthenticated),
                "{location} {binding:?}: {error}"
            );
            let client = builder()
                .await
                .expect("card")
                .with_preferred_bindings(vec![binding])
                .with_credentials(Credentials::new().with_api_key(KEY))
                .build()
                .expect("client");
            client
                .send_message(SendMessageRequest::new(Message::user_text("hi")))
                .await
                .unwrap_or_else(|e| panic!("{location} {binding:?}: {e}"));
            let page = client
                .list_tasks(ListTasksRequest::default())
                .await
                .unwrap_or_else(|e| panic!("{location} {binding:?}: {e}"));
            assert_eq!(
                page.tasks.len(),
                sent + 1,
                "{location} {binding:?}: alice sees the tasks she sent"
            );
        }
    }
}

/// Hands out a new token for each request, counting them.
struct Rotating {
    issued: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl TokenSource for Rotating {
    async fn token(&self) -> Result<String, String> {
        let n = self.issued.fetch_add(1, Ordering::SeqCst);
        Ok(format!("token-{}", n % 2))
    }
}

#[tokio::test]
async fn a_token_source_is_asked_before_every_request() {
    let bearer = SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
        description: None,
        scheme: "Bearer".into(),
        bearer_format: None,
    });
    let url = serve_guarded(
        requiring("bearer", bearer),
        "bearer",
        StaticCredentials::new()
            .with_credential("token-0", "alice")
            .with_credential("token-1", "alice"),
    )
    .await;
    for binding in BINDINGS {
        let issued = Arc::new(AtomicUsize::new(0));
        let client = ClientBuilder::discover(&url)
            .await
            .expect("card")
            .with_preferred_bindings(vec![binding])
            .with_credentials(Credentials::new().with_token_source(Rotating {
                issued: Arc::clone(&issued),
            }))
            .build()
            .expect("client");
        for _ in 0..4 {
            client
                .list_tasks(ListTasksRequest::default())
                .await
                .unwrap_or_else(|e| panic!("{binding:?}: {e}"));
        }
        assert_eq!(issued.load(Ordering::SeqCst), 4, "{binding:?}");
    }
    // A source that fails: the request is not sent, and the error says so.
    struct Broken;
    #[async_trait::async_trait]
    impl TokenSource for Broken {
        async fn token(&self) -> Result<String, String> {
            Err("the vault is sealed".into())
        }
    }
    let client = ClientBuilder::discover(&url)
        .await
        .expect("card")
        .with_credentials(Credentials::new().with_token_source(Broken))
        .build()
        .expect("client");
    let error = client
        .list_tasks(ListTasksRequest::default())
        .await
        .expect_err("no token");
    assert!(matches!(error, ClientError::Credentials(_)), "{error}");
    assert!(error.to_string().contains("vault is sealed"), "{error}");
}

#[tokio::test]
async fn credentials_for_schemes_the_card_lacks_are_refused_at_build() {
    let url = serve_guarded(
        requiring("key", api_key("header", "X-API-Key")),
        "key",
        StaticCredentials::new().with_credential(KEY, "alice"),
    )
    .await;
    let error = ClientBuilder::discover(&url)
        .await
        .expect("card")
        .with_credentials(Credentials::new().with_bearer_token("t-1"))
        .build()
        .expect_err("a bearer token cannot meet an API key requirement");
    assert!(matches!(error, ClientError::Config(_)), "{error}");
    assert!(error.to_string().contains("key"), "{error}");
}

/// A server that records the headers and query of every request; its URL and the record.
async fn serve_recording() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&seen);
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let record = Arc::clone(&record);
        async move {
            record
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!("{:?} {:?}", request.uri(), request.headers()));
            "{}"
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, seen)
}

#[tokio::test]
async fn an_agent_that_asks_for_nothing_gets_no_credential() {
    let (url, seen) = serve_recording().await;
    let mut card = AgentCard::new("Open", "Asks for nothing.", "1.0.0");
    card.supported_interfaces = vec![
        serde_json::from_value(serde_json::json!({
            "url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"
        }))
        .expect("interface"),
    ];
    let client = ClientBuilder::from_card(&card)
        .with_credentials(
            Credentials::new()
                .with_api_key(KEY)
                .with_bearer_token("t-secret"),
        )
        .build()
        .expect("client");
    let _ = client.list_tasks(ListTasksRequest::default()).await;
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).join("\n");
    assert!(!seen.is_empty(), "the request arrived");
    assert!(!seen.contains(KEY) && !seen.contains("t-secret"), "{seen}");
}

#[tokio::test]
async fn a_redirect_to_another_origin_carries_no_credential_there() {
    let (elsewhere, seen) = serve_recording().await;
    // The agent's endpoint answers every request with a redirect to another origin.
    let target = elsewhere.clone();
    let app = axum::Router::new().fallback(move || {
        let target = target.clone();
        async move {
            (
                http::StatusCode::TEMPORARY_REDIRECT,
                [(http::header::LOCATION, format!("{target}/collect"))],
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let agent = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    for location in ["header", "query", "cookie"] {
        let mut card = requiring("key", api_key(location, "x-api-key"));
        card.supported_interfaces = vec![
            serde_json::from_value(serde_json::json!({
                "url": agent, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"
            }))
            .expect("interface"),
        ];
        let client = ClientBuilder::from_card(&card)
            .with_credentials(Credentials::new().with_api_key(KEY))
            .build()
            .expect("client");
        let error = client
            .list_tasks(ListTasksRequest::default())
            .await
            .expect_err("the redirect is not followed");
        assert!(
            matches!(error, ClientError::Http { status: 307, .. }),
            "{location}: {error}"
        );
    }
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    assert!(seen.is_empty(), "the other origin was reached: {seen:?}");
}
