//! A push-notification receiver on 127.0.0.1 that records every POST it gets and answers 200.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode, Uri};
use serde_json::Value;

/// One request a webhook received.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The request's path.
    pub path: String,
    /// Its headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Its body as JSON (`null` when it was not JSON).
    pub body: Value,
}

impl Notification {
    /// The value of header `name` (lower-case), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A running webhook receiver; it stops with the test's runtime.
#[derive(Clone, Default)]
pub struct Webhook {
    received: Arc<Mutex<Vec<Notification>>>,
    /// Every body received, checked against the A2A v1.0.1 proto.
    wire: a2a_wire_check::Recorder,
}

impl Webhook {
    /// Starts a receiver on a free port of 127.0.0.1; its base URL and a handle to what it gets.
    pub async fn start() -> (String, Self) {
        let hook = Self::default();
        let state = hook.clone();
        let app =
            axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: String| {
                let state = state.clone();
                async move {
                    state.record(uri, &headers, &body);
                    StatusCode::OK
                }
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (base, hook)
    }

    fn record(&self, uri: Uri, headers: &HeaderMap, body: &str) {
        self.wire.check_push(body.as_bytes());
        let notification = Notification {
            path: uri.path().to_owned(),
            headers: headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: serde_json::from_str(body).unwrap_or(Value::Null),
        };
        self.received
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(notification);
    }

    /// What `path` has received so far, in arrival order.
    ///
    /// # Panics
    ///
    /// When a body received so far is not strict A2A v1.0.1 JSON.
    pub fn received(&self, path: &str) -> Vec<Notification> {
        self.wire.assert_clean();
        self.received
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|n| n.path == path)
            .cloned()
            .collect()
    }

    /// Waits (at most 30 s) until what `path` received satisfies `done`; panics with what it
    /// got otherwise.
    pub async fn wait_until(
        &self,
        path: &str,
        done: impl Fn(&[Notification]) -> bool,
    ) -> Vec<Notification> {
        for _ in 0..600 {
            let received = self.received(path);
            if done(&received) {
                return received;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "{path} did not receive what was expected: {:#?}",
            self.received(path)
        );
    }
}
