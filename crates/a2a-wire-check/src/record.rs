//! A middleware that checks every JSON body a server writes as it leaves: unary answers and
//! errors whole, stream events one by one as they pass.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt;
use serde_json::Value;

use crate::bodies::{self, Asked};
use crate::schema::{Schema, Violation};

/// What the check found, shared by every copy: bodies checked and what was wrong with them.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    checked: AtomicUsize,
    violations: Mutex<Vec<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Recorder {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many bodies (a stream counts each event) were checked.
    pub fn checked(&self) -> usize {
        self.inner.checked.load(Ordering::SeqCst)
    }

    /// Everything found so far, each line naming the request, the JSON path and the problem.
    pub fn violations(&self) -> Vec<String> {
        lock(&self.inner.violations).clone()
    }

    /// Panics listing what was found, if anything was.
    ///
    /// # Panics
    ///
    /// When a body the server wrote is not strict A2A v1.0.1 JSON.
    pub fn assert_clean(&self) {
        let violations = self.violations();
        assert!(
            violations.is_empty(),
            "the server wrote {} member(s) a strict A2A v1.0.1 reader refuses:\n{}",
            violations.len(),
            violations.join("\n")
        );
    }

    /// Checks a push notification body a webhook received.
    pub fn check_push(&self, body: &[u8]) {
        let found = match serde_json::from_slice::<Value>(body) {
            Ok(value) => bodies::check_push_body(Schema::v1_0(), &value),
            Err(error) => vec![not_json(&error)],
        };
        self.add("push notification", &found);
    }

    fn add(&self, what: &str, found: &[Violation]) {
        self.inner.checked.fetch_add(1, Ordering::SeqCst);
        if !found.is_empty() {
            lock(&self.inner.violations).extend(found.iter().map(|v| format!("{what}: {v}")));
        }
    }
}

fn not_json(error: &serde_json::Error) -> Violation {
    Violation {
        path: "$".into(),
        problem: format!("declared as JSON but is not: {error}"),
    }
}

/// The middleware (for `axum::middleware::from_fn_with_state` with a [`Recorder`]): checks
/// every JSON and event-stream body the inner service writes. gRPC and other bodies pass
/// untouched.
pub async fn record(State(recorder): State<Recorder>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    // A copy of the request body as the server reads it, for a JSON-RPC request's method.
    let copy = Arc::new(Mutex::new(Vec::new()));
    let tee = Arc::clone(&copy);
    let body = Body::new(body.map_frame(move |frame| {
        if let Some(data) = frame.data_ref() {
            lock(&tee).extend_from_slice(data);
        }
        frame
    }));
    let mut asked = Asked {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        jsonrpc_method: None,
    };
    let response = next.run(Request::from_parts(parts, body)).await;
    asked.jsonrpc_method = serde_json::from_slice::<Value>(&lock(&copy))
        .ok()
        .and_then(|request| Some(request.get("method")?.as_str()?.to_owned()));
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let what = format!(
        "{} {} ({})",
        asked.method,
        asked.path,
        response.status().as_u16()
    );
    if content_type.starts_with("text/event-stream") {
        return watch_events(recorder, what, response);
    }
    let media_type = content_type.split(';').next().unwrap_or("").trim();
    if !(media_type == "application/json" || media_type.ends_with("+json")) {
        return response;
    }
    let status = response.status().as_u16();
    let (parts, body) = response.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Response::from_parts(parts, Body::empty()),
    };
    if !bytes.is_empty() {
        let found = match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => bodies::check_body(Schema::v1_0(), &asked, status, &value),
            Err(error) => vec![not_json(&error)],
        };
        recorder.add(&what, &found);
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// Passes an event stream through, checking each event's `data` as it goes by.
fn watch_events(recorder: Recorder, what: String, response: Response) -> Response {
    let (parts, body) = response.into_parts();
    let mut pending = String::new();
    let body = body.map_frame(move |frame| {
        if let Some(data) = frame.data_ref() {
            pending.push_str(&String::from_utf8_lossy(data));
            while let Some(end) = pending.find("\n\n") {
                let block: String = pending.drain(..end + 2).collect();
                let data: Vec<&str> = block
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(|line| line.strip_prefix(' ').unwrap_or(line))
                    .collect();
                if data.is_empty() {
                    continue;
                }
                let found = match serde_json::from_str::<Value>(&data.join("\n")) {
                    Ok(event) => bodies::check_event(Schema::v1_0(), &event),
                    Err(error) => vec![not_json(&error)],
                };
                recorder.add(&format!("{what} event"), &found);
            }
        }
        frame
    });
    Response::from_parts(parts, Body::new(body))
}
