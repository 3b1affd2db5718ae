//! A store that reports every operation's latency and failures (see [`crate::telemetry`]),
//! wrapped around whatever store the handler is built with.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use a2a_protocol_types::{Task, TaskId};
use async_trait::async_trait;

use super::{
    ClaimOutcome, Coordination, KeyClaim, Loaded, StoreError, StoredTask, TaskPage, TaskQuery,
    TaskStore, TaskWrite, WriteOutcome,
};
use crate::telemetry;

pub(crate) struct MeteredStore(pub(crate) Arc<dyn TaskStore>);

async fn timed<T>(
    operation: &'static str,
    call: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let started = Instant::now();
    let result = call.await;
    telemetry::store_operation(operation, started, &result);
    result
}

// Every method is forwarded, defaults included: the inner store's own versions must run.
#[async_trait]
impl TaskStore for MeteredStore {
    async fn get(&self, tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError> {
        timed("get", self.0.get(tenant, id)).await
    }

    async fn save(&self, tenant: &str, task: &Task) -> Result<(), StoreError> {
        timed("save", self.0.save(tenant, task)).await
    }

    async fn save_shared(&self, tenant: &str, task: &Arc<Task>) -> Result<(), StoreError> {
        timed("save", self.0.save_shared(tenant, task)).await
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        timed("list", self.0.list(tenant, query)).await
    }

    async fn load(&self, tenant: &str, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        timed("load", self.0.load(tenant, id)).await
    }

    async fn load_if_changed(
        &self,
        tenant: &str,
        id: &TaskId,
        revision: u64,
    ) -> Result<Loaded, StoreError> {
        timed(
            "load_if_changed",
            self.0.load_if_changed(tenant, id, revision),
        )
        .await
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        timed("write", self.0.write(write)).await
    }

    fn coordination(&self) -> Option<&dyn Coordination> {
        self.0.coordination()
    }

    fn supports_idempotency(&self) -> bool {
        self.0.supports_idempotency()
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        timed("claim_key", self.0.claim_idempotency_key(claim)).await
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        timed("release_key", self.0.release_idempotency_key(claim)).await
    }

    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        timed("find_key", self.0.find_idempotency_key(claim)).await
    }

    fn atomic_writes(&self) -> bool {
        self.0.atomic_writes()
    }
}
