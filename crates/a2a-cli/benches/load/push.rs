//! Push notifications under load, on each store: keyed JSON-RPC sends at concurrency 16 with
//! and without a push config (what asking for notifications costs a send), and how fast the
//! server's delivery worker gets the notifications to a receiver on 127.0.0.1.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::generator::{self, Binding, Load};
use crate::servers;

/// What push cost and delivered on one store.
#[derive(Clone, Debug)]
pub struct PushCost {
    pub store: &'static str,
    /// Sends per second without a push config (the mean of a run before and one after).
    pub plain_rps: f64,
    /// Sends per second with a push config on each.
    pub pushed_rps: f64,
    /// Sends made with a push config.
    pub sends: u64,
    /// Notifications the receiver got for them.
    pub delivered: u64,
    /// Notifications per second, from the first pushed send to the last notification.
    pub delivered_per_s: f64,
}

impl PushCost {
    pub fn share(&self) -> f64 {
        if self.plain_rps > 0.0 {
            self.pushed_rps / self.plain_rps
        } else {
            0.0
        }
    }
}

/// A webhook that answers every POST at once and counts them.
struct Receiver {
    count: AtomicU64,
    last: Mutex<Option<Instant>>,
}

async fn receiver() -> (String, Arc<Receiver>) {
    let state = Arc::new(Receiver {
        count: AtomicU64::new(0),
        last: Mutex::new(None),
    });
    let counted = Arc::clone(&state);
    let app = axum::Router::new().fallback(move || {
        let counted = Arc::clone(&counted);
        async move {
            counted.count.fetch_add(1, Ordering::Relaxed);
            *counted.last.lock().expect("lock") = Some(Instant::now());
            axum::http::StatusCode::OK
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, state)
}

/// Measures push on `store` (`postgres` is the database URL for PostgreSQL): runs of at most
/// `seconds` or `max_sends` sends, plain, with push, plain again; then waits (at most two
/// minutes) until no notification has come for two seconds.
pub async fn measure(
    store: &'static str,
    postgres: &str,
    seconds: f64,
    max_sends: u64,
    run_id: u64,
) -> PushCost {
    let (url, received) = receiver().await;
    // The generator's requests are built from a `'static` template; one per store is leaked.
    let url: &'static str = Box::leak(url.into_boxed_str());
    let server = servers::start_ours(store, postgres, &["--allow-push-to", "127.0.0.1"]);
    let load = |push_url, duration: f64, max| Load {
        binding: Binding::JsonRpc,
        keyed: true,
        concurrency: 16,
        duration: Duration::from_secs_f64(duration),
        max_requests: Some(max),
        push_url,
    };
    generator::run(server.addr, load(None, seconds / 6.0, 2_000), run_id).await;
    let before = generator::run(server.addr, load(None, seconds, max_sends), run_id + 1).await;
    let started = Instant::now();
    let pushed = generator::run(server.addr, load(Some(url), seconds, max_sends), run_id + 2).await;
    let after = generator::run(server.addr, load(None, seconds, max_sends), run_id + 3).await;
    let drain_until = Instant::now() + Duration::from_secs(120);
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let last = *received.last.lock().expect("lock");
        let quiet = last.is_some_and(|last| last.elapsed() > Duration::from_secs(2));
        if quiet || Instant::now() > drain_until {
            break;
        }
    }
    let delivered = received.count.load(Ordering::Relaxed);
    let last = received.last.lock().expect("lock").unwrap_or(started);
    assert_eq!(pushed.errors, 0, "{store}: sends with a push config failed");
    PushCost {
        store,
        plain_rps: (before.rps() + after.rps()) / 2.0,
        pushed_rps: pushed.rps(),
        sends: pushed.requests,
        delivered,
        delivered_per_s: delivered as f64 / last.duration_since(started).as_secs_f64().max(1e-9),
    }
}
