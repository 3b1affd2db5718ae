//! The server side of the lease and budget extensions, over HTTP.

mod common;

use std::time::Duration;

use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::A2aError;
use async_trait::async_trait;
use common::*;
use serde_json::{Value, json};

const LEASE_URI: &str = "https://a2a-rust.com/extensions/lease/v1";

async fn card(base: &str) -> Value {
    client()
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json")
}

fn advertises(card: &Value, uri: &str) -> bool {
    card["capabilities"]["extensions"]
        .as_array()
        .is_some_and(|exts| exts.iter().any(|e| e["uri"] == uri))
}

fn leased(ttl_ms: u64) -> Value {
    let mut params = send_params("m-1", "hi");
    params["message"]["metadata"] = json!({"a2a-rust.com/lease": {"ttlMs": ttl_ms}});
    params["message"]["extensions"] = json!([LEASE_URI]);
    params["configuration"] = json!({"returnImmediately": true});
    params
}

#[tokio::test]
async fn the_lease_extension_is_advertised_only_when_configured() {
    let plain = serve(CountingAgent::new()).await;
    assert!(!advertises(&card(&plain.base).await, LEASE_URI));
    let leasing = serve_handler(
        RequestHandler::builder(CountingAgent::new())
            .with_leases(Duration::from_secs(60))
            .build(),
    )
    .await;
    assert!(advertises(&card(&leasing.base).await, LEASE_URI));
    assert!(advertises(
        &card(&leasing.base).await,
        "https://a2a-rust.com/extensions/budget/v1"
    ));
}

#[tokio::test]
async fn leases_outside_the_bounds_are_refused() {
    let agent = CountingAgent::new();
    let server = serve_handler(
        RequestHandler::builder(agent.clone())
            .with_leases(Duration::from_secs(10))
            .build(),
    )
    .await;
    for ttl in [999, 10_001] {
        for binding in BINDINGS {
            let error = call(binding, &server.base, "SendMessage", leased(ttl))
                .await
                .expect_err("refused");
            assert_eq!(error.reason, "INVALID_PARAMS", "{ttl}: {}", error.body);
        }
    }
    assert_eq!(agent.runs(), 0);
}

async fn state(base: &str, id: &Value, renew: bool) -> String {
    let headers: &[(&str, &str)] = if renew {
        &[("A2A-Extensions", LEASE_URI)]
    } else {
        &[]
    };
    let task = call_with(Binding::Rest, base, "GetTask", json!({"id": id}), headers)
        .await
        .expect("task");
    task["status"]["state"].as_str().expect("state").to_owned()
}

#[tokio::test]
async fn a_lease_lapses_into_cancellation_unless_get_task_renews_it() {
    let server = serve_handler(
        RequestHandler::builder(CountingAgent::slow(Duration::from_secs(30)))
            .with_leases(Duration::from_secs(60))
            .build(),
    )
    .await;
    let renewed = call(Binding::JsonRpc, &server.base, "SendMessage", leased(2_000))
        .await
        .expect("ok");
    let forgotten = call(Binding::JsonRpc, &server.base, "SendMessage", leased(2_000))
        .await
        .expect("ok");
    let (renewed, forgotten) = (
        task_of(&renewed)["id"].clone(),
        task_of(&forgotten)["id"].clone(),
    );
    // Renew one every 200 ms for over 3 s; leave the other alone.
    for _ in 0..16 {
        assert_eq!(
            state(&server.base, &renewed, true).await,
            "TASK_STATE_WORKING"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        state(&server.base, &forgotten, false).await,
        "TASK_STATE_CANCELED"
    );
    assert_eq!(
        state(&server.base, &renewed, true).await,
        "TASK_STATE_WORKING"
    );
}

/// Spends five tokens per step for ten steps.
#[derive(Clone, Default)]
struct Spender;

#[async_trait]
impl AgentExecutor for Spender {
    async fn execute(&self, _ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        events.working().await?;
        for _ in 0..10 {
            events.spend("tokens", 5).await?;
        }
        events.complete(None).await
    }
}

fn budgeted(grant: Value) -> Value {
    let mut params = send_params("m-1", "hi");
    params["message"]["metadata"] = json!({"a2a-rust.com/budget": grant});
    params
}

#[tokio::test]
async fn spending_past_a_meter_fails_the_task_as_budget_exhausted() {
    let server = serve(Spender).await;
    for binding in BINDINGS {
        let enough = call(
            binding,
            &server.base,
            "SendMessage",
            budgeted(json!({"meters": {"tokens": 100}})),
        )
        .await
        .expect("ok");
        let task = task_of(&enough);
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
        let report = &task["metadata"]["a2a-rust.com/budget"];
        assert_eq!(report["spent"]["tokens"], 50, "{report}");
        assert_eq!(report["meters"]["tokens"], 50, "what is left");

        let short = call(
            binding,
            &server.base,
            "SendMessage",
            budgeted(json!({"meters": {"tokens": 12}})),
        )
        .await
        .expect("ok");
        let task = task_of(&short);
        assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
        assert_eq!(
            task["metadata"]["a2a-rust.com/budget"]["exhausted"],
            "tokens"
        );
        let reason = task["status"]["message"]["parts"][0]["text"]
            .as_str()
            .expect("reason");
        assert!(reason.contains("budget exhausted"), "{reason}");
    }
}

#[tokio::test]
async fn status_updates_carry_the_budget_report_and_time_is_enforced() {
    let server = serve(CountingAgent::slow(Duration::from_secs(30))).await;
    for binding in BINDINGS {
        let events = stream(
            binding,
            &server.base,
            "SendStreamingMessage",
            budgeted(json!({"remainingMs": 200})),
        )
        .await
        .expect("stream");
        assert_eq!(last_state(&events), "TASK_STATE_FAILED", "{events:?}");
        let reports: Vec<&Value> = events
            .iter()
            .filter_map(|e| e["statusUpdate"]["metadata"].get("a2a-rust.com/budget"))
            .collect();
        assert!(
            reports.len() >= 2,
            "every status update reports: {events:?}"
        );
        assert_eq!(reports.last().expect("report")["exhausted"], "time");
    }
    let error = call(
        Binding::Rest,
        &server.base,
        "SendMessage",
        budgeted(json!({"meters": {"": 1}})),
    )
    .await
    .expect_err("malformed");
    assert_eq!(error.reason, "INVALID_PARAMS");
}
