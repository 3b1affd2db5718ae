//! What the fuzz targets (`fuzz/`) check, one function per target, each taking the fuzzer's
//! bytes and panicking when a property breaks. The regression test replays every input kept
//! under `fuzz/seeds` and `fuzz/regressions` through the same functions, so a crash once found
//! stays fixed.

use std::sync::OnceLock;

use a2a_protocol_client::sse::SseParser;
use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::{A2aServer, RequestHandler};
use a2a_protocol_types::AgentCard;
use a2a_protocol_types::idempotency::{IDEMPOTENCY_METADATA_KEY, key_of, set_key, validate_key};
use a2a_protocol_types::jsonrpc::{JsonRpcRequest, JsonRpcResponse};
use a2a_protocol_types::{Message, Metadata};
use serde_json::Value;
use tower::ServiceExt as _;

/// What a target checks of one input; it panics when a property breaks.
pub type Check = fn(&[u8]);

/// The fuzz targets, by name.
pub const TARGETS: [(&str, Check); 5] = [
    ("jsonrpc_envelope", jsonrpc_envelope),
    ("rest_request", rest_request),
    ("sse_parsing", sse_parsing),
    ("key_validation", key_validation),
    ("agent_card", agent_card),
];

/// One echo agent and a runtime to serve it, shared by every input of a run.
struct Harness {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let handler = RequestHandler::builder(EchoAgent::new())
            .with_agent_card(EchoAgent::card())
            .build();
        let router = runtime.block_on(async { A2aServer::new(handler).router() });
        Harness { runtime, router }
    })
}

/// What the server answered.
struct Answer {
    status: u16,
    streamed: bool,
    body: Vec<u8>,
}

/// Sends one request through the server's router.
fn serve(request: http::Request<axum::body::Body>) -> Answer {
    let harness = harness();
    harness.runtime.block_on(async {
        let response = harness
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router is infallible");
        let status = response.status().as_u16();
        let streamed = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .map(|body| body.to_bytes().to_vec())
            .unwrap_or_default();
        Answer {
            status,
            streamed,
            body,
        }
    })
}

fn round_trips<T>(value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let text = serde_json::to_string(value).expect("what was read can be written");
    let again: T = serde_json::from_str(&text).expect("what was written can be read");
    assert_eq!(
        &again, value,
        "a round trip through {text} changed the value"
    );
}

/// JSON-RPC envelopes: whatever reads as a request or response writes back the same, and the
/// server answers any body with a JSON-RPC object and never a server error.
pub fn jsonrpc_envelope(data: &[u8]) {
    if let Ok(request) = serde_json::from_slice::<JsonRpcRequest>(data) {
        round_trips(&request);
    }
    if let Ok(response) = serde_json::from_slice::<JsonRpcResponse>(data) {
        let text = serde_json::to_string(&response).expect("a response writes");
        let again: JsonRpcResponse = serde_json::from_str(&text).expect("and reads back");
        assert_eq!(again.id, response.id);
        assert_eq!(again.outcome.is_ok(), response.outcome.is_ok());
    }
    let request = http::Request::post("/")
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(axum::body::Body::from(data.to_vec()))
        .expect("a request");
    let Answer {
        status,
        streamed,
        body,
    } = serve(request);
    assert!(
        status < 500 || status == 503,
        "HTTP {status} for a JSON-RPC body"
    );
    if streamed {
        assert_eq!(status, 200);
        return;
    }
    let answer: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
        panic!(
            "the answer is not JSON ({e}): {}",
            String::from_utf8_lossy(&body)
        )
    });
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert!(
        answer.get("result").is_some() != answer.get("error").is_some(),
        "a result or an error, not both: {answer}"
    );
    if answer["error"]["code"].as_i64() == Some(-32603) {
        assert_eq!(
            status, 503,
            "an internal error for a client's mistake: {answer}"
        );
    }
}

/// HTTP+JSON routing and parameters: the first byte picks the method, the bytes up to the
/// first newline are the path and query, the rest is the body. Any of them answers without a
/// server error, and every error is the binding's JSON error shape.
pub fn rest_request(data: &[u8]) {
    let Some((&method, rest)) = data.split_first() else {
        return;
    };
    let method = ["GET", "POST", "DELETE", "PUT"][usize::from(method % 4)];
    let (target, body) = match rest.iter().position(|b| *b == b'\n') {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let Ok(target) = std::str::from_utf8(target) else {
        return;
    };
    let Ok(uri) = http::Uri::try_from(format!("/{}", target.trim_start_matches('/'))) else {
        return;
    };
    let request = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(axum::body::Body::from(body.to_vec()))
        .expect("a request");
    let Answer { status, body, .. } = serve(request);
    assert!(
        status < 500 || status == 503,
        "HTTP {status} for {method} {target}"
    );
    if status >= 400 {
        let answer: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!(
                "an error that is not JSON ({e}): {}",
                String::from_utf8_lossy(&body)
            )
        });
        assert!(answer["error"]["code"].is_i64(), "an error body: {answer}");
    }
}

/// SSE parsing: no input panics, and how the bytes are chunked never changes the events.
pub fn sse_parsing(data: &[u8]) {
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let whole = SseParser::new().feed(stream);
    let mut chunked = Vec::new();
    let mut parser = SseParser::new();
    for chunk in stream.chunks(usize::from(step).max(1)) {
        chunked.extend(parser.feed(chunk));
    }
    assert_eq!(whole, chunked, "chunks of {step} bytes gave other events");
    for event in &whole {
        assert!(
            !event.data.contains('\r'),
            "a line end inside data: {event:?}"
        );
    }
}

/// Key validation: a key is accepted exactly when the rules say so, an accepted key survives
/// being attached and sent, and any metadata value under the key's name is read without panic.
pub fn key_validation(data: &[u8]) {
    if let Ok(key) = std::str::from_utf8(data) {
        let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':');
        let expected = (16..=255).contains(&key.len()) && key.bytes().all(allowed);
        assert_eq!(validate_key(key).is_ok(), expected, "{key:?}");
        let mut message = Message::user_text("hi");
        assert_eq!(set_key(&mut message, key).is_ok(), expected);
        if expected {
            let wire = serde_json::to_string(&message).expect("a message writes");
            let back: Message = serde_json::from_str(&wire).expect("and reads back");
            assert_eq!(key_of(&back), Ok(Some(key)));
        } else {
            assert!(message.metadata.is_none(), "an invalid key changes nothing");
        }
    }
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        let mut metadata = Metadata::new();
        metadata.insert(IDEMPOTENCY_METADATA_KEY.into(), value.clone());
        let mut message = Message::user_text("hi");
        message.metadata = Some(metadata);
        match (key_of(&message), value.as_str()) {
            (Ok(Some(key)), Some(text)) => assert_eq!(key, text),
            (Ok(Some(_)), None) => panic!("a non-string read as a key"),
            (Ok(None), _) => panic!("a present value read as no key"),
            (Err(_), _) => {}
        }
    }
}

/// Agent cards: whatever reads as a card writes back as the same card.
pub fn agent_card(data: &[u8]) {
    let Ok(card) = serde_json::from_slice::<AgentCard>(data) else {
        return;
    };
    round_trips(&card);
    let _ = card.supports_extension(a2a_protocol_types::idempotency::IDEMPOTENCY_EXTENSION_URI);
}
