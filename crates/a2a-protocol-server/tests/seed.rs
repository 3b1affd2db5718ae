//! The server half of `idempotent-sends.md`: its fourth code block, unchanged, and the card
//! check of its third block against a real server on every bundled store.

mod common;

use std::sync::Arc;

use a2a_protocol_server::RequestHandler;
use a2a_protocol_server::store::{InMemoryStoreConfig, InMemoryTaskStore, TaskStore};
use a2a_protocol_types::agent_card::AgentCard;
use common::*;

#[test]
fn server_support() {
    use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};

    assert!(InMemoryTaskStore::new().supports_idempotency());
}

#[tokio::test]
async fn every_bundled_store_advertises_the_extension_on_the_card() {
    let stores: Vec<(&str, Arc<dyn TaskStore>)> = vec![
        ("in-memory", Arc::new(InMemoryTaskStore::new())),
        (
            "tenant-aware in-memory",
            Arc::new(InMemoryTaskStore::with_config(
                InMemoryStoreConfig::default().with_tenant_aware(true),
            )),
        ),
    ];
    for (name, store) in stores {
        let server = serve_handler(
            RequestHandler::builder(CountingAgent::new())
                .with_store(store)
                .build(),
        )
        .await;
        let card: AgentCard = client()
            .get(format!("{}/.well-known/agent-card.json", server.base))
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("a card");

        // The seed's third block, applied to the served card.
        use a2a_protocol_types::idempotency::IDEMPOTENCY_EXTENSION_URI;
        let capabilities = card.capabilities;
        let honours_keys = capabilities
            .extensions
            .as_ref()
            .is_some_and(|exts| exts.iter().any(|e| e.uri == IDEMPOTENCY_EXTENSION_URI));
        assert!(honours_keys, "{name}");
    }
}
