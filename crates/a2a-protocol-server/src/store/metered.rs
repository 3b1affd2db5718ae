//! A store that reports every operation's latency and failures (see [`crate::telemetry`]),
//! wrapped around whatever store the handler is built with.

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{Task, TaskId};
use async_trait::async_trait;

use super::{
    ClaimOutcome, Coordination, DeliverySettled, KeyClaim, Loaded, PushConfigSaved, PushDelivery,
    StoreError, StoredTask, TaskPage, TaskQuery, TaskStore, TaskWrite, WriteOutcome,
};
use crate::telemetry::timed_store_call;

pub(crate) struct MeteredStore(pub(crate) Arc<dyn TaskStore>);

// Every method is forwarded, defaults included: the inner store's own versions must run.
#[async_trait]
impl TaskStore for MeteredStore {
    async fn get(&self, tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError> {
        timed_store_call!("get", self.0.get(tenant, id))
    }

    async fn save(&self, tenant: &str, task: &Task) -> Result<(), StoreError> {
        timed_store_call!("save", self.0.save(tenant, task))
    }

    async fn save_shared(&self, tenant: &str, task: &Arc<Task>) -> Result<(), StoreError> {
        timed_store_call!("save", self.0.save_shared(tenant, task))
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        timed_store_call!("list", self.0.list(tenant, query))
    }

    async fn load(&self, tenant: &str, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        timed_store_call!("load", self.0.load(tenant, id))
    }

    async fn load_if_changed(
        &self,
        tenant: &str,
        id: &TaskId,
        revision: u64,
    ) -> Result<Loaded, StoreError> {
        timed_store_call!(
            "load_if_changed",
            self.0.load_if_changed(tenant, id, revision)
        )
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        timed_store_call!("write", self.0.write(write))
    }

    fn coordination(&self) -> Option<&dyn Coordination> {
        self.0.coordination()
    }

    fn supports_idempotency(&self) -> bool {
        self.0.supports_idempotency()
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        timed_store_call!("claim_key", self.0.claim_idempotency_key(claim))
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        timed_store_call!("release_key", self.0.release_idempotency_key(claim))
    }

    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        timed_store_call!("find_key", self.0.find_idempotency_key(claim))
    }

    fn atomic_writes(&self) -> bool {
        self.0.atomic_writes()
    }

    fn supports_push_configs(&self) -> bool {
        self.0.supports_push_configs()
    }

    async fn save_push_config(
        &self,
        tenant: &str,
        config: &TaskPushNotificationConfig,
        max_per_task: usize,
    ) -> Result<PushConfigSaved, StoreError> {
        timed_store_call!(
            "save_push_config",
            self.0.save_push_config(tenant, config, max_per_task)
        )
    }

    async fn get_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        timed_store_call!(
            "get_push_config",
            self.0.get_push_config(tenant, task_id, id)
        )
    }

    async fn list_push_configs(
        &self,
        tenant: &str,
        task_id: &TaskId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        timed_store_call!(
            "list_push_configs",
            self.0.list_push_configs(tenant, task_id, after, limit)
        )
    }

    async fn delete_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<bool, StoreError> {
        timed_store_call!(
            "delete_push_config",
            self.0.delete_push_config(tenant, task_id, id)
        )
    }

    async fn claim_push_deliveries(
        &self,
        claimant: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        timed_store_call!(
            "claim_push_deliveries",
            self.0.claim_push_deliveries(claimant, lease, limit)
        )
    }

    async fn settle_push_delivery(
        &self,
        claimant: &str,
        delivery: &PushDelivery,
        settled: &DeliverySettled,
    ) -> Result<(), StoreError> {
        timed_store_call!(
            "settle_push_delivery",
            self.0.settle_push_delivery(claimant, delivery, settled)
        )
    }

    async fn dead_push_deliveries(&self, limit: usize) -> Result<Vec<PushDelivery>, StoreError> {
        timed_store_call!("dead_push_deliveries", self.0.dead_push_deliveries(limit))
    }
}
