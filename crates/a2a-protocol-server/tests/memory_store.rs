//! The in-memory stores' bounds: key expiry and cap, terminal-task expiry and eviction, and
//! keys that outlive their tasks.

mod common;

use std::time::Duration;

use a2a_protocol_server::store::{
    ClaimOutcome, InMemoryStoreConfig, InMemoryTaskStore, KeyClaim, KeyScope, StoreError,
    TaskQuery, TaskStore, TaskStoreExt,
};
use a2a_protocol_types::{MessageId, Task, TaskId, TaskState, TaskStatus};
use common::stores::put;

fn task(id: &str, state: TaskState) -> Task {
    Task::new(id, "ctx", TaskStatus::new(state))
}

fn claim(tenant: &str, key: &str, message: &str, task: &str) -> KeyClaim {
    KeyClaim {
        scope: KeyScope {
            tenant: tenant.into(),
            caller: None,
        },
        key: key.parse().expect("a valid key"),
        message_id: MessageId::new(message),
        task_id: TaskId::new(task),
        charged_to: None,
    }
}

const KEY: &str = "8f14e45fceea167a5a36dedd4bea2543";

#[tokio::test]
async fn claims_resolve_to_claimed_replay_or_conflict() {
    let store = InMemoryTaskStore::new();
    assert_eq!(
        store
            .claim_idempotency_key(&claim("", KEY, "m1", "t1"))
            .await
            .expect("ok"),
        ClaimOutcome::Claimed
    );
    assert_eq!(
        store
            .claim_idempotency_key(&claim("", KEY, "m1", "t2"))
            .await
            .expect("ok"),
        ClaimOutcome::Replay(TaskId::new("t1"))
    );
    assert_eq!(
        store
            .claim_idempotency_key(&claim("", KEY, "m2", "t3"))
            .await
            .expect("ok"),
        ClaimOutcome::Conflict
    );
    assert_eq!(
        store
            .claim_idempotency_key(&claim("other", KEY, "m2", "t4"))
            .await
            .expect("ok"),
        ClaimOutcome::Claimed
    );
}

#[tokio::test]
async fn a_release_frees_only_the_releasing_claim() {
    let store = InMemoryTaskStore::new();
    store
        .claim_idempotency_key(&claim("", KEY, "m1", "t1"))
        .await
        .expect("ok");
    store
        .release_idempotency_key(&claim("", KEY, "m1", "t-other"))
        .await
        .expect("ok");
    assert_eq!(
        store
            .claim_idempotency_key(&claim("", KEY, "m1", "t2"))
            .await
            .expect("ok"),
        ClaimOutcome::Replay(TaskId::new("t1")),
        "a release naming another task frees nothing"
    );
    store
        .release_idempotency_key(&claim("", KEY, "m1", "t1"))
        .await
        .expect("ok");
    assert_eq!(
        store
            .claim_idempotency_key(&claim("", KEY, "m1", "t2"))
            .await
            .expect("ok"),
        ClaimOutcome::Claimed
    );
}

#[tokio::test]
async fn racing_claims_of_one_key_have_exactly_one_winner() {
    let store = std::sync::Arc::new(InMemoryTaskStore::new());
    let claims = (0..64).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .claim_idempotency_key(&claim("", KEY, "m1", &format!("t{i}")))
                .await
        })
    });
    let outcomes = futures::future::join_all(claims).await;
    let winners = outcomes
        .iter()
        .filter(|o| {
            matches!(
                o.as_ref().expect("joined").as_ref().expect("ok"),
                ClaimOutcome::Claimed
            )
        })
        .count();
    assert_eq!(winners, 1);
}

#[tokio::test]
async fn the_key_cap_refuses_new_keys_but_never_evicts_live_ones() {
    let store =
        InMemoryTaskStore::with_config(InMemoryStoreConfig::default().with_max_idempotency_keys(3));
    for i in 0..3 {
        let key = format!("{KEY}-{i}");
        store
            .claim_idempotency_key(&claim("", &key, "m", "t"))
            .await
            .expect("ok");
    }
    let refused = store
        .claim_idempotency_key(&claim("", &format!("{KEY}-9"), "m", "t"))
        .await;
    // Refused until the oldest key expires, which is when room frees up: a day from now.
    match refused {
        Err(StoreError::FullUntil { what, retry_after }) => {
            assert_eq!(what, "idempotency keys");
            assert!(
                retry_after > Duration::from_secs(23 * 3600),
                "{retry_after:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    for i in 0..3 {
        let key = format!("{KEY}-{i}");
        assert!(matches!(
            store
                .claim_idempotency_key(&claim("", &key, "m", "t"))
                .await
                .expect("ok"),
            ClaimOutcome::Replay(_)
        ));
    }
}

#[tokio::test]
async fn expired_keys_make_room_under_the_cap() {
    let store = InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default()
            .with_max_idempotency_keys(2)
            .with_idempotency_key_ttl(Duration::from_millis(20)),
    );
    store
        .claim_idempotency_key(&claim("", &format!("{KEY}-1"), "m", "t"))
        .await
        .expect("ok");
    store
        .claim_idempotency_key(&claim("", &format!("{KEY}-2"), "m", "t"))
        .await
        .expect("ok");
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert_eq!(
        store
            .claim_idempotency_key(&claim("", &format!("{KEY}-3"), "m", "t"))
            .await
            .expect("room"),
        ClaimOutcome::Claimed
    );
    assert_eq!(
        store.idempotency_key_count(),
        1,
        "both expired keys were swept"
    );
}

#[tokio::test]
async fn the_task_cap_evicts_the_oldest_terminal_task_first_and_never_a_running_one() {
    let store = InMemoryTaskStore::with_config(InMemoryStoreConfig::default().with_max_tasks(3));
    put(&store, "", task("running", TaskState::Working))
        .await
        .expect("ok");
    put(&store, "", task("done-1", TaskState::Completed))
        .await
        .expect("ok");
    put(&store, "", task("done-2", TaskState::Failed))
        .await
        .expect("ok");
    put(&store, "", task("new", TaskState::Submitted))
        .await
        .expect("room made");
    assert!(
        store
            .get("", &TaskId::new("done-1"))
            .await
            .expect("ok")
            .is_none(),
        "oldest terminal evicted"
    );
    assert!(
        store
            .get("", &TaskId::new("done-2"))
            .await
            .expect("ok")
            .is_some()
    );
    assert!(
        store
            .get("", &TaskId::new("running"))
            .await
            .expect("ok")
            .is_some()
    );
    put(&store, "", task("newer", TaskState::Working))
        .await
        .expect("room made");
    let full = put(&store, "", task("newest", TaskState::Working)).await;
    assert!(
        matches!(full, Err(StoreError::CapacityExceeded(_))),
        "only running tasks left: {full:?}"
    );
    assert_eq!(store.task_count(), 3);
}

#[tokio::test]
async fn terminal_tasks_expire_and_their_keys_outlive_them() {
    let store = InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default().with_terminal_task_ttl(Duration::from_millis(20)),
    );
    store
        .claim_idempotency_key(&claim("", KEY, "m1", "t1"))
        .await
        .expect("ok");
    put(&store, "", task("t1", TaskState::Completed))
        .await
        .expect("ok");
    put(&store, "", task("running", TaskState::Working))
        .await
        .expect("ok");
    tokio::time::sleep(Duration::from_millis(40)).await;
    let page = store
        .list(
            "",
            &TaskQuery {
                page_size: 10,
                ..TaskQuery::default()
            },
        )
        .await
        .expect("ok");
    assert_eq!(
        page.total_size, 1,
        "the expired terminal task is gone, the running one stays"
    );
    assert!(
        store
            .get("", &TaskId::new("t1"))
            .await
            .expect("ok")
            .is_none()
    );
    assert_eq!(
        store
            .claim_idempotency_key(&claim("", KEY, "m1", "t9"))
            .await
            .expect("ok"),
        ClaimOutcome::Replay(TaskId::new("t1")),
        "the key still names the swept task, so a retry cannot run again"
    );
}

#[tokio::test]
async fn memory_stays_bounded_under_sustained_load() {
    let store = InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default()
            .with_max_tasks(500)
            .with_max_idempotency_keys(100_000),
    );
    for i in 0..20_000 {
        let id = format!("task-{i}");
        store
            .claim_idempotency_key(&claim("", &format!("{KEY}-{i}"), "m", &id))
            .await
            .expect("ok");
        put(&store, "", task(&id, TaskState::Working))
            .await
            .expect("ok");
        put(&store, "", task(&id, TaskState::Completed))
            .await
            .expect("ok");
    }
    assert_eq!(store.task_count(), 500);
    assert_eq!(
        store.idempotency_key_count(),
        20_000,
        "keys are bounded by their own cap and TTL"
    );
}

#[tokio::test]
async fn a_tenant_aware_store_keeps_tenants_apart_with_limits_each() {
    let store = InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default()
            .with_tenant_aware(true)
            .with_max_idempotency_keys(1),
    );
    put(&store, "a", task("t1", TaskState::Completed))
        .await
        .expect("ok");
    assert!(
        store
            .get("b", &TaskId::new("t1"))
            .await
            .expect("ok")
            .is_none()
    );
    assert!(
        store
            .get("a", &TaskId::new("t1"))
            .await
            .expect("ok")
            .is_some()
    );
    assert_eq!(
        store
            .claim_idempotency_key(&claim("a", KEY, "m", "t1"))
            .await
            .expect("ok"),
        ClaimOutcome::Claimed
    );
    assert_eq!(
        store
            .claim_idempotency_key(&claim("b", KEY, "m", "t2"))
            .await
            .expect("ok"),
        ClaimOutcome::Claimed
    );
    let full = store
        .claim_idempotency_key(&claim("a", &format!("{KEY}-2"), "m", "t3"))
        .await;
    assert!(
        matches!(full, Err(StoreError::FullUntil { .. })),
        "{full:?}"
    );
    assert_eq!(store.tenant_key_count("a"), 1);
    assert_eq!(store.idempotency_key_count(), 2, "one key in each tenant");
}

#[tokio::test]
async fn a_tenant_aware_store_holds_a_bounded_number_of_tenants() {
    let store = InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default()
            .with_tenant_aware(true)
            .with_max_tenants(3)
            .with_terminal_task_ttl(Duration::ZERO),
    );
    // Three tenants with a running task each fill it.
    for tenant in ["a", "b", "c"] {
        put(&store, tenant, task("t-1", TaskState::Working))
            .await
            .expect("room");
    }
    let refused = put(&store, "d", task("t-1", TaskState::Working)).await;
    assert!(
        matches!(refused, Err(StoreError::CapacityExceeded("tenants"))),
        "{refused:?}"
    );
    let refused = store
        .claim_idempotency_key(&claim("d", KEY, "m", "t"))
        .await;
    assert!(refused.is_err(), "a key for a new tenant is refused too");
    // A tenant whose tasks are done and gone makes room; the others stay.
    put(&store, "b", task("t-1", TaskState::Completed))
        .await
        .expect("an update of a held tenant");
    put(&store, "d", task("t-1", TaskState::Working))
        .await
        .expect("room made by the tenant with nothing left");
    assert_eq!(store.tenant_count(), 3);
    for tenant in ["a", "c", "d"] {
        assert!(
            store
                .get(tenant, &"t-1".into())
                .await
                .expect("get")
                .is_some(),
            "{tenant} kept its task"
        );
    }
    // Reading an unknown tenant makes no tenant.
    assert!(store.get("zz", &"t-1".into()).await.expect("get").is_none());
    assert_eq!(store.tenant_count(), 3);
}

#[tokio::test]
async fn task_bytes_are_bounded_and_make_room_from_finished_tasks() {
    let megabyte = |id: &str, state: TaskState, megabytes: usize| {
        let mut task = task(id, state);
        task.history.push(a2a_protocol_types::Message::user_text(
            "x".repeat(megabytes * 1024 * 1024),
        ));
        task
    };
    let store = InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default().with_max_task_bytes(3 * 1024 * 1024 + 4096),
    );
    put(&store, "", megabyte("done", TaskState::Completed, 1))
        .await
        .expect("room");
    put(&store, "", megabyte("running", TaskState::Working, 1))
        .await
        .expect("room");
    // A big new task makes room by evicting the finished one, never the running one.
    put(&store, "", megabyte("big", TaskState::Working, 2))
        .await
        .expect("room made from the finished task");
    assert!(store.get("", &"done".into()).await.expect("get").is_none());
    assert!(
        store
            .get("", &"running".into())
            .await
            .expect("get")
            .is_some()
    );
    // With only running tasks left, a write that grows the total is refused...
    let refused = put(&store, "", megabyte("more", TaskState::Working, 1)).await;
    assert!(
        matches!(refused, Err(StoreError::CapacityExceeded("task bytes"))),
        "{refused:?}"
    );
    // ...but one that does not grow a task passes, and a finished task frees its bytes.
    put(&store, "", megabyte("running", TaskState::Completed, 1))
        .await
        .expect("settling never grows");
    put(&store, "", megabyte("more", TaskState::Working, 1))
        .await
        .expect("room from the settled task");
}

#[tokio::test]
async fn a_versioned_write_counts_the_messages_it_appends() {
    use a2a_protocol_server::store::{TaskWrite, WriteOutcome};
    use std::sync::Arc;
    let store = InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default().with_max_task_bytes(1536 * 1024),
    );
    let mut running = task("t-1", TaskState::Working);
    running.history.push(a2a_protocol_types::Message::user_text(
        "x".repeat(1024 * 1024),
    ));
    let created = Arc::new(running.clone());
    assert_eq!(
        store
            .write(&TaskWrite::create("", &created))
            .await
            .expect("room"),
        WriteOutcome::Written
    );
    // A small update of the head fits; appending another megabyte does not.
    running.metadata = Some(serde_json::Map::from_iter([("k".into(), "v".into())]));
    let small = Arc::new(running.clone());
    assert_eq!(
        store
            .write(&TaskWrite::update("", &small, 1))
            .await
            .expect("room"),
        WriteOutcome::Written
    );
    running.history.push(a2a_protocol_types::Message::user_text(
        "y".repeat(1024 * 1024),
    ));
    let grown = Arc::new(running);
    let refused = store
        .write(&TaskWrite::update("", &grown, 2).with_new_messages(1))
        .await;
    assert!(
        matches!(refused, Err(StoreError::CapacityExceeded("task bytes"))),
        "{refused:?}"
    );
}
