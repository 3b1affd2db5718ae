//! A shared store is a store: `Arc<S>` (and `Arc<dyn TaskStore>`) can be passed wherever a
//! store is taken, and the same store kept for the retention sweeper or for tests.

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{Task, TaskId};
use async_trait::async_trait;

use super::{
    ClaimOutcome, Coordination, DeliverySettled, KeyClaim, Loaded, PurgeReport, PushConfigSaved,
    PushDelivery, Retention, RetentionPolicy, StoreError, StoredTask, TaskPage, TaskQuery,
    TaskStore, TaskWrite, WriteOutcome,
};

// Every method is forwarded, defaults included: the shared store's own versions must run.
#[async_trait]
impl<S: TaskStore + ?Sized> TaskStore for Arc<S> {
    async fn get(&self, tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError> {
        (**self).get(tenant, id).await
    }

    async fn save(&self, tenant: &str, task: &Task) -> Result<(), StoreError> {
        (**self).save(tenant, task).await
    }

    async fn save_shared(&self, tenant: &str, task: &Arc<Task>) -> Result<(), StoreError> {
        (**self).save_shared(tenant, task).await
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        (**self).list(tenant, query).await
    }

    async fn load(&self, tenant: &str, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        (**self).load(tenant, id).await
    }

    async fn load_if_changed(
        &self,
        tenant: &str,
        id: &TaskId,
        revision: u64,
    ) -> Result<Loaded, StoreError> {
        (**self).load_if_changed(tenant, id, revision).await
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        (**self).write(write).await
    }

    fn coordination(&self) -> Option<&dyn Coordination> {
        (**self).coordination()
    }

    fn supports_idempotency(&self) -> bool {
        (**self).supports_idempotency()
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        (**self).claim_idempotency_key(claim).await
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        (**self).release_idempotency_key(claim).await
    }

    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        (**self).find_idempotency_key(claim).await
    }

    fn atomic_writes(&self) -> bool {
        (**self).atomic_writes()
    }

    fn supports_push_configs(&self) -> bool {
        (**self).supports_push_configs()
    }

    async fn save_push_config(
        &self,
        tenant: &str,
        config: &TaskPushNotificationConfig,
        max_per_task: usize,
    ) -> Result<PushConfigSaved, StoreError> {
        (**self)
            .save_push_config(tenant, config, max_per_task)
            .await
    }

    async fn get_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        (**self).get_push_config(tenant, task_id, id).await
    }

    async fn list_push_configs(
        &self,
        tenant: &str,
        task_id: &TaskId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        (**self)
            .list_push_configs(tenant, task_id, after, limit)
            .await
    }

    async fn delete_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<bool, StoreError> {
        (**self).delete_push_config(tenant, task_id, id).await
    }

    async fn claim_push_deliveries(
        &self,
        claimant: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        (**self).claim_push_deliveries(claimant, lease, limit).await
    }

    async fn settle_push_delivery(
        &self,
        claimant: &str,
        delivery: &PushDelivery,
        settled: &DeliverySettled,
    ) -> Result<(), StoreError> {
        (**self)
            .settle_push_delivery(claimant, delivery, settled)
            .await
    }

    async fn dead_push_deliveries(&self, limit: usize) -> Result<Vec<PushDelivery>, StoreError> {
        (**self).dead_push_deliveries(limit).await
    }
}

#[async_trait]
impl<R: Retention + ?Sized> Retention for Arc<R> {
    async fn purge_expired(&self, policy: &RetentionPolicy) -> Result<PurgeReport, StoreError> {
        (**self).purge_expired(policy).await
    }
}
