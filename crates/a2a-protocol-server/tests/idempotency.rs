//! Every row of the outcome table (the `idempotency` module docs, `docs/idempotency.md`), on both
//! bindings, unary and streaming, over real HTTP.

mod common;

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_server::store::{
    ClaimOutcome, InMemoryStoreConfig, InMemoryTaskStore, KeyClaim, KeyFirstStore, NonAtomicWrites,
    StoreError, TaskPage, TaskQuery,
};
use a2a_protocol_server::{CallerIdentity, HandlerConfig, RequestHandler, ServerConfig};
use a2a_protocol_types::{Task, TaskId};
use async_trait::async_trait;
use common::*;
use futures::future::join_all;
use serde_json::json;

#[tokio::test]
async fn sends_without_a_key_are_ordinary_sends() {
    for binding in BINDINGS {
        let agent = CountingAgent::new();
        let server = serve(agent.clone()).await;
        let first = call(
            binding,
            &server.base,
            "SendMessage",
            send_params("m-1", "hi"),
        )
        .await
        .expect("ok");
        let second = call(
            binding,
            &server.base,
            "SendMessage",
            send_params("m-1", "hi"),
        )
        .await
        .expect("ok");
        assert_ne!(task_of(&first)["id"], task_of(&second)["id"], "{binding:?}");
        let streamed = stream(
            binding,
            &server.base,
            "SendStreamingMessage",
            send_params("m-1", "hi"),
        )
        .await
        .expect("ok");
        let again = stream(
            binding,
            &server.base,
            "SendStreamingMessage",
            send_params("m-1", "hi"),
        )
        .await
        .expect("ok");
        assert_ne!(
            stream_task_id(&streamed),
            stream_task_id(&again),
            "{binding:?}"
        );
        assert_eq!(agent.runs(), 4, "{binding:?}");
    }
}

#[tokio::test]
async fn a_malformed_key_is_refused_and_nothing_runs() {
    for binding in BINDINGS {
        let agent = CountingAgent::new();
        let server = serve(agent.clone()).await;
        for bad in [
            json!("short"),
            json!("has a space in it!!"),
            json!(1234567890123456789_u64),
        ] {
            let mut params = send_params("m-1", "hi");
            params["message"]["metadata"] = json!({"a2a-rust.com/idempotency-key": bad});
            let error = call(binding, &server.base, "SendMessage", params.clone())
                .await
                .expect_err("refused");
            assert_eq!(error.reason, "INVALID_PARAMS", "{binding:?} {}", error.body);
            match binding {
                Binding::JsonRpc => assert_eq!(error.code, Some(-32602)),
                Binding::Rest => assert_eq!(error.status, 400),
                Binding::Grpc => assert_eq!(error.grpc, Some(tonic::Code::InvalidArgument)),
            }
            let error = stream(binding, &server.base, "SendStreamingMessage", params)
                .await
                .expect_err("refused");
            assert_eq!(error.reason, "INVALID_PARAMS");
        }
        assert_eq!(agent.runs(), 0);
    }
}

/// Tasks in a map, saved whole: the simplest store, whose writes cannot be atomic.
#[derive(Default)]
struct MapStore(std::sync::Mutex<std::collections::HashMap<TaskId, Task>>);

impl MapStore {
    fn get(&self, id: &TaskId) -> Option<Task> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    fn save(&self, task: &Task) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(task.id.clone(), task.clone());
    }
}

/// A store that keeps tasks but has no key index: the default of the trait.
#[derive(Default)]
struct NoIndexStore(MapStore);

#[async_trait]
impl KeyFirstStore for NoIndexStore {
    async fn get(&self, _tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError> {
        Ok(self.0.get(id))
    }
    async fn list(&self, _tenant: &str, _query: &TaskQuery) -> Result<TaskPage, StoreError> {
        Ok(TaskPage::default())
    }
    async fn save(&self, _tenant: &str, task: &Arc<Task>) -> Result<(), StoreError> {
        self.0.save(task);
        Ok(())
    }
}

#[tokio::test]
async fn a_store_without_the_index_refuses_keyed_sends_and_is_not_advertised() {
    let agent = CountingAgent::new();
    let handler = RequestHandler::builder(agent.clone())
        .with_store(NonAtomicWrites(NoIndexStore::default()))
        .build();
    let server = serve_handler(handler).await;
    for binding in BINDINGS {
        let params = keyed_params("m-1", "hi", &key());
        let error = call(binding, &server.base, "SendMessage", params.clone())
            .await
            .expect_err("refused");
        assert_eq!(error.reason, "UNSUPPORTED_OPERATION");
        match binding {
            Binding::JsonRpc => assert_eq!(error.code, Some(-32004)),
            Binding::Rest => assert_eq!(error.status, 400),
            Binding::Grpc => assert_eq!(error.grpc, Some(tonic::Code::FailedPrecondition)),
        }
        let error = stream(binding, &server.base, "SendStreamingMessage", params)
            .await
            .expect_err("refused");
        assert_eq!(error.reason, "UNSUPPORTED_OPERATION");
    }
    assert_eq!(agent.runs(), 0);
    let card: serde_json::Value = client()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    let advertised = card["capabilities"]["extensions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        !advertised
            .iter()
            .any(|e| e["uri"] == "https://a2a-rust.com/extensions/idempotency/v1"),
        "{card}"
    );
    // Unkeyed sends still work.
    call(
        Binding::Rest,
        &server.base,
        "SendMessage",
        send_params("m-2", "hi"),
    )
    .await
    .expect("ok");
}

#[tokio::test]
async fn a_retry_with_the_same_message_returns_the_first_task() {
    for binding in BINDINGS {
        let agent = CountingAgent::new();
        let server = serve(agent.clone()).await;
        let key = key();
        let first = call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("m-1", "hi", &key),
        )
        .await
        .expect("ok");
        let retry = call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("m-1", "hi", &key),
        )
        .await
        .expect("ok");
        assert_eq!(task_of(&first)["id"], task_of(&retry)["id"]);
        assert_eq!(task_of(&retry)["status"]["state"], "TASK_STATE_COMPLETED");
        // A streaming retry of the same send replays too: the settled task, then the end.
        let events = stream(
            binding,
            &server.base,
            "SendStreamingMessage",
            keyed_params("m-1", "hi", &key),
        )
        .await
        .expect("stream");
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0]["task"]["id"], task_of(&first)["id"]);
        assert_eq!(agent.runs(), 1, "{binding:?}");
    }
}

#[tokio::test]
async fn a_streaming_send_and_its_streaming_retry_name_the_same_task() {
    for binding in BINDINGS {
        let agent = CountingAgent::new();
        let server = serve(agent.clone()).await;
        let key = key();
        let first = stream(
            binding,
            &server.base,
            "SendStreamingMessage",
            keyed_params("m-1", "hi", &key),
        )
        .await
        .expect("stream");
        assert_eq!(last_state(&first), "TASK_STATE_COMPLETED");
        let retry = stream(
            binding,
            &server.base,
            "SendStreamingMessage",
            keyed_params("m-1", "hi", &key),
        )
        .await
        .expect("stream");
        assert_eq!(stream_task_id(&first), stream_task_id(&retry));
        assert_eq!(agent.runs(), 1);
    }
}

#[tokio::test]
async fn a_retry_while_the_first_attempt_runs_waits_like_the_original() {
    for binding in BINDINGS {
        let agent = CountingAgent::slow(Duration::from_millis(400));
        let server = serve(agent.clone()).await;
        let key = key();
        let base = server.base.clone();
        let params = keyed_params("m-1", "hi", &key);
        let first = tokio::spawn({
            let (base, params) = (base.clone(), params.clone());
            async move { call(binding, &base, "SendMessage", params).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let retry = call(binding, &base, "SendMessage", params.clone())
            .await
            .expect("ok");
        assert_eq!(
            task_of(&retry)["status"]["state"],
            "TASK_STATE_COMPLETED",
            "blocking retry waits"
        );
        let first = first.await.expect("joined").expect("ok");
        assert_eq!(task_of(&first)["id"], task_of(&retry)["id"]);
        assert_eq!(agent.runs(), 1);
    }
}

#[tokio::test]
async fn a_streaming_retry_yields_the_snapshot_then_follows_the_live_task() {
    for binding in BINDINGS {
        let agent = CountingAgent::slow(Duration::from_millis(400));
        let server = serve(agent.clone()).await;
        let key = key();
        let params = keyed_params("m-1", "hi", &key);
        let first = tokio::spawn({
            let (base, params) = (server.base.clone(), params.clone());
            async move { stream(binding, &base, "SendStreamingMessage", params).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let retry = stream(binding, &server.base, "SendStreamingMessage", params)
            .await
            .expect("stream");
        assert_eq!(
            retry[0]["task"]["status"]["state"], "TASK_STATE_WORKING",
            "{retry:?}"
        );
        assert_eq!(last_state(&retry), "TASK_STATE_COMPLETED", "{retry:?}");
        let first = first.await.expect("joined").expect("stream");
        assert_eq!(stream_task_id(&first), stream_task_id(&retry));
        assert_eq!(agent.runs(), 1);
    }
}

#[tokio::test]
async fn a_reused_key_with_another_message_is_refused_without_revealing_the_holder() {
    for binding in BINDINGS {
        let agent = CountingAgent::new();
        let server = serve(agent.clone()).await;
        let key = key();
        call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("holder-message-id", "a", &key),
        )
        .await
        .expect("ok");
        let error = call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("m-2", "b", &key),
        )
        .await
        .expect_err("refused");
        assert_eq!(error.reason, "INVALID_PARAMS");
        match binding {
            Binding::JsonRpc => assert_eq!(error.code, Some(-32602)),
            Binding::Rest => assert_eq!(error.status, 400),
            Binding::Grpc => assert_eq!(error.grpc, Some(tonic::Code::InvalidArgument)),
        }
        assert!(
            !error.body.to_string().contains("holder-message-id"),
            "{}",
            error.body
        );
        let error = stream(
            binding,
            &server.base,
            "SendStreamingMessage",
            keyed_params("m-3", "c", &key),
        )
        .await
        .expect_err("refused");
        assert_eq!(error.reason, "INVALID_PARAMS");
        assert_eq!(agent.runs(), 1);
    }
}

#[tokio::test]
async fn a_key_whose_task_was_swept_answers_task_not_found_and_runs_nothing() {
    for binding in BINDINGS {
        let agent = CountingAgent::new();
        let store = Arc::new(InMemoryTaskStore::with_config(
            InMemoryStoreConfig::default().with_terminal_task_ttl(Duration::from_millis(20)),
        ));
        let server = serve_handler(handler_with_store(agent.clone(), store.clone())).await;
        let key = key();
        call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("m-1", "hi", &key),
        )
        .await
        .expect("ok");
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Any later write sweeps expired terminal tasks.
        call(
            binding,
            &server.base,
            "SendMessage",
            send_params("m-x", "sweep"),
        )
        .await
        .expect("ok");
        assert_eq!(store.task_count(), 1, "the first task was swept");
        let error = call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("m-1", "hi", &key),
        )
        .await
        .expect_err("not found");
        assert_eq!(error.reason, "TASK_NOT_FOUND");
        match binding {
            Binding::JsonRpc => assert_eq!(error.code, Some(-32001)),
            Binding::Rest => assert_eq!(error.status, 404),
            Binding::Grpc => assert_eq!(error.grpc, Some(tonic::Code::NotFound)),
        }
        let error = stream(
            binding,
            &server.base,
            "SendStreamingMessage",
            keyed_params("m-1", "hi", &key),
        )
        .await
        .expect_err("not found");
        assert_eq!(error.reason, "TASK_NOT_FOUND");
        assert_eq!(
            agent.runs(),
            2,
            "the keyed send ran once, the sweeping send once"
        );
    }
}

#[tokio::test]
async fn past_the_key_cap_a_new_key_gets_503_and_runs_nothing() {
    for binding in BINDINGS {
        let agent = CountingAgent::new();
        let store = Arc::new(InMemoryTaskStore::with_config(
            InMemoryStoreConfig::default().with_max_idempotency_keys(2),
        ));
        let server = serve_handler(handler_with_store(agent.clone(), store)).await;
        let (a, b) = (key(), key());
        call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("m-a", "a", &a),
        )
        .await
        .expect("ok");
        call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("m-b", "b", &b),
        )
        .await
        .expect("ok");
        let error = call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("m-c", "c", &key()),
        )
        .await
        .expect_err("refused");
        assert_status(&error, binding, 503, tonic::Code::Unavailable);
        assert_eq!(error.reason, "RESOURCE_EXHAUSTED");
        assert!(error.retry_after.is_some(), "Retry-After is set");
        if binding == Binding::JsonRpc {
            assert_eq!(error.code, Some(-32603));
            let retry_info = error.body["error"]["data"]
                .as_array()
                .expect("details")
                .iter()
                .any(|d| d["@type"] == "type.googleapis.com/google.rpc.RetryInfo");
            assert!(retry_info, "{}", error.body);
        }
        let error = stream(
            binding,
            &server.base,
            "SendStreamingMessage",
            keyed_params("m-d", "d", &key()),
        )
        .await
        .expect_err("refused");
        assert_status(&error, binding, 503, tonic::Code::Unavailable);
        // A held key still replays at capacity.
        call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("m-a", "a", &a),
        )
        .await
        .expect("replay");
        assert_eq!(agent.runs(), 2);
    }
}

#[tokio::test]
async fn an_expired_key_is_free_again() {
    let agent = CountingAgent::new();
    let store = Arc::new(InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default().with_idempotency_key_ttl(Duration::from_millis(1500)),
    ));
    let server = serve_handler(handler_with_store(agent.clone(), store)).await;
    let key = key();
    let first = call(
        Binding::Rest,
        &server.base,
        "SendMessage",
        keyed_params("m-1", "hi", &key),
    )
    .await
    .expect("ok");
    let replay = call(
        Binding::Rest,
        &server.base,
        "SendMessage",
        keyed_params("m-1", "hi", &key),
    )
    .await
    .expect("ok");
    assert_eq!(
        task_of(&first)["id"],
        task_of(&replay)["id"],
        "held while live"
    );
    tokio::time::sleep(Duration::from_millis(1700)).await;
    let later = call(
        Binding::Rest,
        &server.base,
        "SendMessage",
        keyed_params("m-1", "hi", &key),
    )
    .await
    .expect("ok");
    assert_ne!(task_of(&first)["id"], task_of(&later)["id"]);
    assert_eq!(agent.runs(), 2);
}

#[tokio::test]
async fn a_retried_keyed_follow_up_replays_instead_of_failing_on_the_terminal_task() {
    for binding in BINDINGS {
        let agent = CountingAgent::new();
        let server = serve(agent.clone()).await;
        let asked = call(
            binding,
            &server.base,
            "SendMessage",
            send_params("m-1", "ask"),
        )
        .await
        .expect("ok");
        let task = task_of(&asked);
        assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        let key = key();
        let mut follow_up = keyed_params("m-2", "more", &key);
        follow_up["message"]["taskId"] = task["id"].clone();
        let done = call(binding, &server.base, "SendMessage", follow_up.clone())
            .await
            .expect("ok");
        assert_eq!(task_of(&done)["status"]["state"], "TASK_STATE_COMPLETED");
        let retry = call(binding, &server.base, "SendMessage", follow_up.clone())
            .await
            .expect("replay");
        assert_eq!(task_of(&retry)["id"], task["id"]);
        assert_eq!(task_of(&retry)["status"]["state"], "TASK_STATE_COMPLETED");
        let events = stream(binding, &server.base, "SendStreamingMessage", follow_up)
            .await
            .expect("replay");
        assert_eq!(events[0]["task"]["id"], task["id"]);
        assert_eq!(
            agent.runs(),
            2,
            "the first turn and the follow-up, once each"
        );
        // An unkeyed follow-up to the finished task is refused, as the spec says.
        let mut late = send_params("m-3", "more");
        late["message"]["taskId"] = task["id"].clone();
        let error = call(binding, &server.base, "SendMessage", late)
            .await
            .expect_err("terminal");
        assert_eq!(error.reason, "UNSUPPORTED_OPERATION");
    }
}

#[tokio::test]
async fn sixty_four_concurrent_keyed_sends_run_the_agent_once() {
    for binding in BINDINGS {
        let agent = CountingAgent::slow(Duration::from_millis(50));
        let server = serve(agent.clone()).await;
        let params = keyed_params("m-1", "hi", &key());
        let sends = (0..64).map(|_| {
            let (base, params) = (server.base.clone(), params.clone());
            tokio::spawn(async move { call(binding, &base, "SendMessage", params).await })
        });
        let results = join_all(sends).await;
        let ids: std::collections::HashSet<String> = results
            .into_iter()
            .map(|r| {
                let result = r.expect("joined").expect("ok");
                assert_eq!(task_of(&result)["status"]["state"], "TASK_STATE_COMPLETED");
                task_of(&result)["id"].as_str().expect("id").to_owned()
            })
            .collect();
        assert_eq!(ids.len(), 1, "{binding:?}: {ids:?}");
        assert_eq!(agent.runs(), 1, "{binding:?}");
    }
}

#[tokio::test]
async fn sixty_four_concurrent_keyed_streaming_sends_run_the_agent_once() {
    for binding in BINDINGS {
        let agent = CountingAgent::slow(Duration::from_millis(50));
        let server = serve(agent.clone()).await;
        let params = keyed_params("m-1", "hi", &key());
        let sends = (0..64).map(|_| {
            let (base, params) = (server.base.clone(), params.clone());
            tokio::spawn(
                async move { stream(binding, &base, "SendStreamingMessage", params).await },
            )
        });
        let results = join_all(sends).await;
        let ids: std::collections::HashSet<String> = results
            .into_iter()
            .map(|r| {
                let events = r.expect("joined").expect("stream");
                assert_eq!(last_state(&events), "TASK_STATE_COMPLETED", "{events:?}");
                stream_task_id(&events)
            })
            .collect();
        assert_eq!(ids.len(), 1, "{binding:?}: {ids:?}");
        assert_eq!(agent.runs(), 1, "{binding:?}");
    }
}

#[tokio::test]
async fn keys_are_scoped_to_the_tenant() {
    let agent = CountingAgent::new();
    let server = serve(agent.clone()).await;
    let key = key();
    let mut ids = Vec::new();
    for tenant in ["tenant-a", "tenant-b"] {
        let mut params = keyed_params("m-1", "hi", &key);
        params["tenant"] = json!(tenant);
        let result = call(Binding::JsonRpc, &server.base, "SendMessage", params)
            .await
            .expect("ok");
        ids.push(task_of(&result)["id"].clone());
    }
    assert_ne!(ids[0], ids[1]);
    assert_eq!(agent.runs(), 2);
}

#[tokio::test]
async fn keys_are_scoped_to_the_authenticated_caller() {
    let agent = CountingAgent::new();
    let resolver = |headers: &http::HeaderMap| {
        headers
            .get("x-caller")
            .and_then(|v| v.to_str().ok())
            .map(|v| CallerIdentity(v.to_owned()))
    };
    let server = serve_with(
        RequestHandler::builder(agent.clone()).build(),
        ServerConfig::default().with_caller_resolver(resolver),
    )
    .await;
    let key = key();
    let params = keyed_params("m-1", "hi", &key);
    let alice = call_with(
        Binding::Rest,
        &server.base,
        "SendMessage",
        params.clone(),
        &[("x-caller", "alice")],
    )
    .await
    .expect("ok");
    let bob = call_with(
        Binding::Rest,
        &server.base,
        "SendMessage",
        params.clone(),
        &[("x-caller", "bob")],
    )
    .await
    .expect("ok");
    assert_ne!(
        task_of(&alice)["id"],
        task_of(&bob)["id"],
        "one caller's key never reaches another's task"
    );
    let alice_again = call_with(
        Binding::Rest,
        &server.base,
        "SendMessage",
        params,
        &[("x-caller", "alice")],
    )
    .await
    .expect("ok");
    assert_eq!(task_of(&alice)["id"], task_of(&alice_again)["id"]);
    assert_eq!(agent.runs(), 2);
}

/// A store whose claim fails as busy: the send is refused as retryable and nothing runs.
#[derive(Default)]
struct BusyStore(MapStore);

#[async_trait]
impl KeyFirstStore for BusyStore {
    async fn get(&self, _tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError> {
        Ok(self.0.get(id))
    }
    async fn list(&self, _tenant: &str, _query: &TaskQuery) -> Result<TaskPage, StoreError> {
        Ok(TaskPage::default())
    }
    async fn save(&self, _tenant: &str, task: &Arc<Task>) -> Result<(), StoreError> {
        self.0.save(task);
        Ok(())
    }
    fn supports_idempotency(&self) -> bool {
        true
    }
    async fn claim_idempotency_key(&self, _claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        Err(StoreError::Busy("database is locked".into()))
    }
    async fn release_idempotency_key(&self, _claim: &KeyClaim) -> Result<(), StoreError> {
        Ok(())
    }
}

#[tokio::test]
async fn an_overloaded_store_refuses_with_a_retryable_503() {
    let agent = CountingAgent::new();
    let handler = RequestHandler::builder(agent.clone())
        .with_store(NonAtomicWrites(BusyStore::default()))
        .with_config(HandlerConfig::default())
        .build();
    let server = serve_handler(handler).await;
    for binding in BINDINGS {
        let error = call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("m-1", "hi", &key()),
        )
        .await
        .expect_err("refused");
        assert_status(&error, binding, 503, tonic::Code::Unavailable);
        assert_eq!(error.retry_after.as_deref(), Some("1"));
        assert!(
            !error.message.contains("locked"),
            "internals stay in the log: {}",
            error.message
        );
    }
    assert_eq!(agent.runs(), 0);
}

/// An in-memory store of five keys where, once two are held, each holder may hold two.
fn two_keys_each() -> Arc<InMemoryTaskStore> {
    Arc::new(InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default()
            .with_max_idempotency_keys(5)
            .with_max_idempotency_keys_per_holder(2),
    ))
}

fn refused_until_a_key_expires(error: &WireError, binding: Binding) {
    assert_status(error, binding, 503, tonic::Code::Unavailable);
    assert_eq!(error.reason, "RESOURCE_EXHAUSTED");
    // Room comes when the holder's oldest key expires, a day after its claim.
    let seconds: u64 = error
        .retry_after
        .as_deref()
        .and_then(|s| s.parse().ok())
        .expect("Retry-After in seconds");
    assert!(seconds > 23 * 3600, "Retry-After {seconds}");
}

#[tokio::test]
async fn a_caller_at_its_key_quota_is_refused_while_other_callers_send() {
    let resolver = |headers: &http::HeaderMap| {
        let caller = headers.get("x-caller")?.to_str().ok()?;
        Some(CallerIdentity(caller.to_owned()))
    };
    for binding in BINDINGS {
        let agent = CountingAgent::new();
        let server = serve_with(
            handler_with_store(agent.clone(), two_keys_each()),
            ServerConfig::default().with_caller_resolver(resolver),
        )
        .await;
        let send = |caller: &'static str, id: String| {
            let base = server.base.clone();
            async move {
                call_with(
                    binding,
                    &base,
                    "SendMessage",
                    keyed_params(&id, "x", &key()),
                    &[("x-caller", caller)],
                )
                .await
            }
        };
        for i in 0..2 {
            send("greedy", format!("g-{i}"))
                .await
                .expect("within quota");
        }
        let error = send("greedy", "g-2".into()).await.expect_err("over quota");
        refused_until_a_key_expires(&error, binding);
        for i in 0..2 {
            send("modest", format!("m-{i}")).await.unwrap_or_else(|e| {
                panic!("{binding:?}: another caller is not held back: {}", e.body)
            });
        }
        // Unkeyed sends hold no key and are never refused for it.
        call_with(
            binding,
            &server.base,
            "SendMessage",
            send_params("g-unkeyed", "x"),
            &[("x-caller", "greedy")],
        )
        .await
        .expect("an unkeyed send");
        assert_eq!(agent.runs(), 5, "{binding:?}: the refused send ran nothing");
    }
}

#[tokio::test]
async fn without_a_caller_keys_count_against_the_client_network() {
    let agent = CountingAgent::new();
    let server = serve_handler(handler_with_store(agent.clone(), two_keys_each())).await;
    let from = |address: &str| {
        reqwest::Client::builder()
            .local_address(address.parse::<std::net::IpAddr>().expect("an address"))
            .build()
            .expect("client")
    };
    let send = |client: reqwest::Client, id: String| {
        let base = server.base.clone();
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": keyed_params(&id, "x", &key())});
            let response = client
                .post(format!("{base}/"))
                .header("A2A-Version", "1.0")
                .json(&body)
                .send()
                .await
                .expect("sent");
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body: serde_json::Value = response.json().await.expect("JSON");
            (status, retry_after, body)
        }
    };
    // Another /24: a neighbouring address would be the same client (see key_quotas.rs).
    let (greedy, modest) = (from("127.0.0.1"), from("127.0.1.1"));
    for i in 0..2 {
        let (status, _, body) = send(greedy.clone(), format!("g-{i}")).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, retry_after, body) = send(greedy.clone(), "g-2".into()).await;
    assert_eq!(status, 503, "{body}");
    let seconds: u64 = retry_after
        .and_then(|s| s.parse().ok())
        .expect("Retry-After");
    assert!(seconds > 23 * 3600, "Retry-After {seconds}");
    for i in 0..2 {
        let (status, _, body) = send(modest.clone(), format!("m-{i}")).await;
        assert_eq!(status, 200, "another network is not held back: {body}");
    }
    assert_eq!(agent.runs(), 4);
}

#[tokio::test]
async fn a_caller_set_by_the_applications_own_layer_scopes_keys() {
    // An application's authentication layer, the axum way: it puts the caller in the
    // request's extensions, and the agent's keys are scoped by it.
    async fn authenticate(
        mut request: axum::extract::Request,
        next: axum::middleware::Next,
    ) -> axum::response::Response {
        let user = request
            .headers()
            .get("x-user")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(user) = user {
            request.extensions_mut().insert(CallerIdentity(user));
        }
        next.run(request).await
    }
    let agent = CountingAgent::new();
    let wire = a2a_wire_check::Recorder::new();
    let app = strict_router(
        a2a_protocol_server::A2aServer::new(RequestHandler::builder(agent.clone()).build())
            .router()
            .layer(axum::middleware::from_fn(authenticate)),
        &wire,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let shared_key = key();
    let send = |user: &'static str| {
        let (base, shared_key) = (base.clone(), shared_key.clone());
        async move {
            call_with(
                Binding::JsonRpc,
                &base,
                "SendMessage",
                keyed_params("m-same", "hi", &shared_key),
                &[("x-user", user)],
            )
            .await
            .expect("sent")
        }
    };
    let alice = send("alice").await;
    let alice_again = send("alice").await;
    let bob = send("bob").await;
    assert_eq!(
        task_of(&alice)["id"],
        task_of(&alice_again)["id"],
        "a replay"
    );
    assert_ne!(
        task_of(&alice)["id"],
        task_of(&bob)["id"],
        "the same key of another caller is another key"
    );
    assert_eq!(agent.runs(), 2);
    wire.assert_clean();
}
