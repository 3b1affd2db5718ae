//! The heap held by the in-memory key index with 100 000 keys (target: under 32 MiB), with
//! realistic sizes: 64-hex-digit keys and UUID message and task ids.
//!
//! Run: `cargo bench -p a2a-protocol-server --bench idempotency_memory`

use a2a_protocol_server::store::{InMemoryTaskStore, KeyClaim, KeyScope, TaskStore};
use a2a_protocol_types::idempotency::IdempotencyKey;
use a2a_protocol_types::{MessageId, TaskId};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const KEYS: usize = 100_000;

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let claims: Vec<KeyClaim> = (0..KEYS)
        .map(|_| KeyClaim {
            scope: KeyScope::default(),
            key: IdempotencyKey::generate(),
            message_id: MessageId::random(),
            task_id: TaskId::random(),
            charged_to: None,
        })
        .collect();
    let store = InMemoryTaskStore::new();
    let before = dhat::HeapStats::get().curr_bytes;
    runtime.block_on(async {
        for claim in &claims {
            store.claim_idempotency_key(claim).await.expect("room");
        }
    });
    let after = dhat::HeapStats::get().curr_bytes;
    let held = after.saturating_sub(before);
    println!(
        "{KEYS} idempotency keys hold {:.1} MiB ({} bytes per key)",
        held as f64 / (1024.0 * 1024.0),
        held / KEYS
    );
    drop(store);
}
