//! Heap held by an in-memory store under sustained keyed load: phases of 10 000 keyed sends to
//! the echo agent, with terminal tasks expiring after 200 ms and keys after 1 s, as a busy
//! server would see with shorter clocks. The heap should stop growing once expiry keeps pace.
//!
//! Run: `cargo bench -p a2a-protocol-server --bench memory_under_load`

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::store::{InMemoryStoreConfig, InMemoryTaskStore};
use a2a_protocol_server::{CallContext, RequestHandler};
use a2a_protocol_types::idempotency::{generate_key, set_key};
use a2a_protocol_types::{Message, SendMessageRequest};
use futures::StreamExt;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let config = InMemoryStoreConfig::default()
        .with_terminal_task_ttl(Duration::from_millis(200))
        .with_idempotency_key_ttl(Duration::from_secs(1));
    let store = Arc::new(InMemoryTaskStore::with_config(config));
    let handler = RequestHandler::builder(EchoAgent::new())
        .with_store(store.clone())
        .build();
    let started = std::time::Instant::now();
    for phase in 1..=8 {
        futures::stream::iter(0..10_000)
            .map(|i| {
                let handler = handler.clone();
                async move {
                    let mut message = Message::user_text(format!("load {i}"));
                    set_key(&mut message, &generate_key()).expect("valid");
                    handler
                        .send_message(SendMessageRequest::new(message), &CallContext::default())
                        .await
                        .expect("sent");
                }
            })
            .buffer_unordered(32)
            .for_each(|()| async {})
            .await;
        let heap = dhat::HeapStats::get().curr_bytes;
        println!(
            "after {:>6} sends ({:>5.1} s): heap {:>6.1} MiB, {:>5} tasks and {:>6} keys held",
            phase * 10_000,
            started.elapsed().as_secs_f64(),
            heap as f64 / (1024.0 * 1024.0),
            store.task_count(),
            store.idempotency_key_count()
        );
    }
}
