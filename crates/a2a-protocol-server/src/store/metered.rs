//! A store that reports every operation's latency and failures (see [`crate::telemetry`]),
//! wrapped around whatever store the handler is built with.

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_types::TaskId;
use a2a_protocol_types::push::TaskPushNotificationConfig;
use async_trait::async_trait;

use super::{
    Capabilities, ClaimOutcome, DeliverySettled, KeyClaim, Loaded, PushConfigSaved, PushDelivery,
    PushStore, StoreError, TaskPage, TaskQuery, TaskStore, TaskWrite, WriteOutcome,
};
use crate::telemetry::timed_store_call;

pub(crate) struct MeteredStore(pub(crate) Arc<dyn TaskStore>);

// Every method is forwarded, defaults included: the inner store's own versions must run.
#[async_trait]
impl TaskStore for MeteredStore {
    async fn load(
        &self,
        tenant: &str,
        id: &TaskId,
        known: Option<u64>,
    ) -> Result<Loaded, StoreError> {
        timed_store_call!("load", self.0.load(tenant, id, known))
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        timed_store_call!("list", self.0.list(tenant, query))
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        timed_store_call!("write", self.0.write(write))
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

    fn capabilities(&self) -> Capabilities<'_> {
        let inner = self.0.capabilities();
        // The store's push calls are timed here too; its coordination is not.
        Capabilities {
            push: inner.push.map(|_| self as &dyn PushStore),
            ..inner
        }
    }
}

/// The inner store's push store, which [`MeteredStore::capabilities`] offers only when there is
/// one.
fn push_of(store: &dyn TaskStore) -> Result<&dyn PushStore, StoreError> {
    store.capabilities().push.ok_or(StoreError::Unsupported)
}

#[async_trait]
impl PushStore for MeteredStore {
    async fn save_push_config(
        &self,
        tenant: &str,
        config: &TaskPushNotificationConfig,
        max_per_task: usize,
    ) -> Result<PushConfigSaved, StoreError> {
        timed_store_call!(
            "save_push_config",
            push_of(&*self.0)?.save_push_config(tenant, config, max_per_task)
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
            push_of(&*self.0)?.get_push_config(tenant, task_id, id)
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
            push_of(&*self.0)?.list_push_configs(tenant, task_id, after, limit)
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
            push_of(&*self.0)?.delete_push_config(tenant, task_id, id)
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
            push_of(&*self.0)?.claim_push_deliveries(claimant, lease, limit)
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
            push_of(&*self.0)?.settle_push_delivery(claimant, delivery, settled)
        )
    }

    async fn dead_push_deliveries(&self, limit: usize) -> Result<Vec<PushDelivery>, StoreError> {
        timed_store_call!(
            "dead_push_deliveries",
            push_of(&*self.0)?.dead_push_deliveries(limit)
        )
    }
}
