//! Claim latency of the in-memory key index with 1 000 and with 100 000 keys held: a claim
//! (and its expiry sweep) must not slow down as the index grows.
//!
//! Run: `cargo bench -p a2a-protocol-server --bench idempotency_claims`

use std::hint::black_box;

use a2a_protocol_server::store::{
    InMemoryStoreConfig, InMemoryTaskStore, KeyClaim, KeyScope, TaskStore,
};
use a2a_protocol_types::{MessageId, TaskId};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn claim(i: u64) -> KeyClaim {
    KeyClaim {
        scope: KeyScope::default(),
        key: format!("{i:064x}").parse().expect("a valid key"),
        message_id: MessageId::new(format!("message-{i:08}-0000-0000-0000-000000000000")),
        task_id: TaskId::new(format!("task-{i:08}-0000-0000-0000-000000000000")),
        charged_to: None,
    }
}

fn filled(runtime: &tokio::runtime::Runtime, held: u64) -> InMemoryTaskStore {
    // Room for the held keys plus the one each iteration claims and releases.
    let config = InMemoryStoreConfig::default().with_max_idempotency_keys(held as usize + 1);
    let store = InMemoryTaskStore::with_config(config);
    runtime.block_on(async {
        for i in 0..held {
            store.claim_idempotency_key(&claim(i)).await.expect("room");
        }
    });
    store
}

fn claims(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("claim");
    for held in [1_000u64, 100_000] {
        let store = filled(&runtime, held);
        let mut next = held;
        group.bench_with_input(
            BenchmarkId::new("new_key_then_release", held),
            &held,
            |b, _| {
                b.iter(|| {
                    next += 1;
                    let fresh = claim(next);
                    runtime.block_on(async {
                        black_box(store.claim_idempotency_key(&fresh).await.expect("claimed"));
                        store
                            .release_idempotency_key(&fresh)
                            .await
                            .expect("released");
                    });
                })
            },
        );
        let mut i = 0;
        group.bench_with_input(
            BenchmarkId::new("replay_of_held_key", held),
            &held,
            |b, &held| {
                b.iter(|| {
                    i = (i + 7919) % held;
                    let retry = claim(i);
                    runtime.block_on(async {
                        black_box(store.claim_idempotency_key(&retry).await.expect("replay"))
                    })
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, claims);
criterion_main!(benches);
