//! `a2a listen`: a webhook receiver that prints each push notification once, so a push flow
//! can be watched end to end (`a2a serve --allow-push-to 127.0.0.1` in one terminal, `a2a send
//! --push-url` and this in others).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use a2a_protocol_server::push::{
    DELIVERY_ID_HEADER, NOTIFICATION_TOKEN_HEADER, TASK_GENERATION_HEADER,
};
use a2a_protocol_types::StreamResponse;
use axum::http::{HeaderMap, StatusCode};
use serde_json::json;

use crate::exit::Failure;
use crate::output::{Output, event_line, say};

/// How many delivery ids are remembered for spotting duplicates; the oldest are forgotten.
const REMEMBERED: usize = 100_000;

#[derive(clap::Args)]
pub(crate) struct ListenArgs {
    /// The address to receive notifications on; webhooks are `http://ADDR/ANY/PATH`.
    #[arg(long, default_value = "127.0.0.1:8090")]
    addr: SocketAddr,
    /// Accept only notifications carrying this token (X-A2A-Notification-Token); others are
    /// answered 401 [default: any].
    #[arg(long)]
    token: Option<String>,
}

#[derive(Default)]
struct Seen {
    ids: HashSet<String>,
    order: std::collections::VecDeque<String>,
}

impl Seen {
    /// Whether `id` is new; remembers it.
    fn first_time(&mut self, id: &str) -> bool {
        if !self.ids.insert(id.to_owned()) {
            return false;
        }
        self.order.push_back(id.to_owned());
        if self.order.len() > REMEMBERED
            && let Some(oldest) = self.order.pop_front()
        {
            self.ids.remove(&oldest);
        }
        true
    }
}

pub(crate) async fn listen(args: ListenArgs, output: Output) -> Result<(), Failure> {
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| Failure::usage(format!("cannot listen on {}: {e}", args.addr)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::internal(e.to_string()))?;
    output.note(
        &format!(
            "a2a: receiving push notifications at http://{addr}/ (any path); send with \
             --push-url http://{addr}/hook"
        ),
        json!({"listening": format!("http://{addr}/")}),
    );
    let seen = Arc::new(Mutex::new(Seen::default()));
    let token = Arc::new(args.token);
    let app = axum::Router::new().fallback(move |headers: HeaderMap, body: axum::body::Bytes| {
        let seen = Arc::clone(&seen);
        let token = Arc::clone(&token);
        async move { receive(&headers, &body, &seen, token.as_deref(), output) }
    });
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|e| Failure::internal(format!("the receiver stopped: {e}")))
}

fn receive(
    headers: &HeaderMap,
    body: &[u8],
    seen: &Mutex<Seen>,
    token: Option<&str>,
    output: Output,
) -> StatusCode {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(expected) = token
        && header(NOTIFICATION_TOKEN_HEADER) != Some(expected)
    {
        output.note(
            "a2a: refused a notification without the expected token",
            json!({"refused": "token"}),
        );
        return StatusCode::UNAUTHORIZED;
    }
    let Ok(event) = serde_json::from_slice::<StreamResponse>(body) else {
        output.note(
            "a2a: refused a body that is not an A2A StreamResponse",
            json!({"refused": "body"}),
        );
        return StatusCode::BAD_REQUEST;
    };
    let delivery_id = header(DELIVERY_ID_HEADER).unwrap_or("").to_owned();
    let generation = header(TASK_GENERATION_HEADER).unwrap_or("?").to_owned();
    let first = delivery_id.is_empty()
        || seen
            .lock()
            .map(|mut seen| seen.first_time(&delivery_id))
            .unwrap_or(true);
    if output.json {
        say(&json!({
            "deliveryId": delivery_id,
            "generation": generation,
            "duplicate": !first,
            "event": event,
        })
        .to_string());
    } else if first {
        let task = event.task_id().map(|t| t.to_string()).unwrap_or_default();
        say(&format!(
            "{delivery_id}  task {task} gen {generation}  {}",
            event_line(&event)
        ));
    } else {
        say(&format!("{delivery_id}  (duplicate, already shown)"));
    }
    StatusCode::OK
}
