//! What a follow-up costs as a task's history grows: one task asking for input on every turn,
//! followed up `TURNS` times in a row, on the SQLite and PostgreSQL stores. A store that
//! rewrote the whole task on every event would slow down with every turn; one that appends
//! should cost about the same at the last turn as at the first.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::servers;

/// Follow-ups sent to one task.
pub const TURNS: usize = 1_000;
/// How many turns at each end are compared.
const WINDOW: usize = 50;

/// The cost of a follow-up on a fresh task and on one `TURNS` turns long.
#[derive(Clone, Debug)]
pub struct FollowUpCost {
    pub store: &'static str,
    /// Median latency of the first `WINDOW` follow-ups, in µs.
    pub fresh_us: f64,
    /// Median latency of the last `WINDOW` follow-ups, in µs.
    pub long_us: f64,
    pub turns: usize,
}

impl FollowUpCost {
    pub fn ratio(&self) -> f64 {
        if self.fresh_us > 0.0 {
            self.long_us / self.fresh_us
        } else {
            0.0
        }
    }
}

async fn send(client: &reqwest::Client, base: &str, message: Value) -> Value {
    client
        .post(format!("{base}/"))
        .header("A2A-Version", "1.0")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            // The answer carries no history, so its size does not grow with the task.
            "params": {"message": message, "configuration": {"historyLength": 0}}
        }))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("a JSON-RPC answer")
}

/// Measures follow-ups on `store` (`postgres` is the database URL for PostgreSQL).
pub async fn measure(store: &'static str, postgres: &str, turns: usize) -> FollowUpCost {
    let server = servers::start_ours(store, postgres, &["--agent", "conformance"]);
    let base = format!("http://{}", server.addr);
    let client = reqwest::Client::new();
    let message = |n: usize| {
        json!({"messageId": format!("tck-input-required-{n}"), "role": "ROLE_USER",
               "parts": [{"text": "more"}]})
    };
    let first = send(&client, &base, message(0)).await;
    let id = first["result"]["task"]["id"]
        .as_str()
        .expect("a task")
        .to_owned();
    let mut latencies = Vec::with_capacity(turns);
    for n in 1..=turns {
        let mut follow_up = message(n);
        follow_up["taskId"] = json!(id);
        let started = Instant::now();
        let answer = send(&client, &base, follow_up).await;
        latencies.push(started.elapsed());
        assert_eq!(
            answer["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{answer}"
        );
    }
    let window = WINDOW.min(turns / 2).max(1);
    let median = |d: &[Duration]| {
        let mut us: Vec<f64> = d.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        us.sort_by(f64::total_cmp);
        us[us.len() / 2]
    };
    FollowUpCost {
        store,
        fresh_us: median(&latencies[..window]),
        long_us: median(&latencies[turns - window..]),
        turns,
    }
}
