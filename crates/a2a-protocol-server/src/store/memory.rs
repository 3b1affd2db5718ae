//! The in-memory store: tasks and keys in process memory, in one namespace or one per tenant.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use a2a_protocol_types::TaskId;
use a2a_protocol_types::push::TaskPushNotificationConfig;
use async_trait::async_trait;

use super::epoch_millis;
use super::shard::Shard;
use super::tenant::{Tenants, lock};
use super::{
    Capabilities, ClaimOutcome, DeliverySettled, InMemoryStoreConfig, KeyClaim, Loaded,
    PushConfigSaved, PushDelivery, PushStore, StoreError, TaskPage, TaskQuery, TaskStore,
    TaskWrite, WriteOutcome,
};

/// Tasks and idempotency keys in process memory, bounded by [`InMemoryStoreConfig`].
///
/// By default tasks share one namespace whatever the request's tenant; with
/// [`InMemoryStoreConfig::with_tenant_aware`] each tenant has its own tasks, keys and limits, and a
/// task of tenant A is invisible to tenant B. Idempotency keys are always scoped by tenant and
/// caller.
///
/// ```
/// use a2a_protocol_server::agents::EchoAgent;
/// use a2a_protocol_server::store::InMemoryTaskStore;
/// use a2a_protocol_server::RequestHandler;
///
/// let handler = RequestHandler::builder(EchoAgent::new())
///     .with_store(InMemoryTaskStore::new())
///     .build();
/// assert!(handler.store().supports_idempotency());
/// ```
///
/// Tenant-aware:
///
/// ```
/// use std::sync::Arc;
///
/// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore, InMemoryStoreConfig, TaskStoreExt, TaskWrite};
/// use a2a_protocol_types::{Task, TaskState, TaskStatus};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = InMemoryTaskStore::with_config(InMemoryStoreConfig::default().with_tenant_aware(true));
/// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
/// store.write(&TaskWrite::create("a", &task)).await?;
/// assert!(store.get("a", &"t-1".into()).await?.is_some());
/// assert!(store.get("b", &"t-1".into()).await?.is_none(), "tenant b cannot see it");
/// # Ok(())
/// # }
/// ```
pub struct InMemoryTaskStore {
    layout: Layout,
}

enum Layout {
    /// One namespace for every tenant.
    Shared(Arc<Mutex<Shard>>),
    /// One namespace per tenant.
    PerTenant(Tenants),
}

impl InMemoryTaskStore {
    /// A store with the default limits.
    ///
    /// ```
    /// use a2a_protocol_server::store::InMemoryTaskStore;
    ///
    /// assert_eq!(InMemoryTaskStore::new().task_count(), 0);
    /// ```
    pub fn new() -> Self {
        Self::with_config(InMemoryStoreConfig::default())
    }

    /// A store with the given limits (per tenant, when it is tenant-aware).
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, InMemoryStoreConfig};
    ///
    /// let store = InMemoryTaskStore::with_config(InMemoryStoreConfig::default().with_max_tasks(100));
    /// assert_eq!(store.idempotency_key_count(), 0);
    /// ```
    pub fn with_config(config: InMemoryStoreConfig) -> Self {
        let layout = if config.tenant_aware {
            Layout::PerTenant(Tenants::new(config))
        } else {
            Layout::Shared(Arc::new(Mutex::new(Shard::new(config, Arc::default()))))
        };
        Self { layout }
    }

    /// The namespace a write for `tenant` goes to, made if it is new.
    fn shard(&self, tenant: &str) -> Result<Arc<Mutex<Shard>>, StoreError> {
        match &self.layout {
            Layout::Shared(shard) => Ok(Arc::clone(shard)),
            Layout::PerTenant(tenants) => tenants.shard(tenant),
        }
    }

    /// The namespace a read for `tenant` looks in, if there is one.
    fn existing(&self, tenant: &str) -> Option<Arc<Mutex<Shard>>> {
        match &self.layout {
            Layout::Shared(shard) => Some(Arc::clone(shard)),
            Layout::PerTenant(tenants) => tenants.existing(tenant),
        }
    }

    /// Every namespace.
    fn all(&self) -> Vec<Arc<Mutex<Shard>>> {
        match &self.layout {
            Layout::Shared(shard) => vec![Arc::clone(shard)],
            Layout::PerTenant(tenants) => tenants.all(),
        }
    }

    fn total(&self, count: impl Fn(&Shard) -> usize) -> usize {
        match &self.layout {
            Layout::Shared(shard) => count(&lock(shard)),
            Layout::PerTenant(tenants) => tenants.all().iter().map(|s| count(&lock(s))).sum(),
        }
    }

    /// How many idempotency keys are held, across tenants.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, KeyClaim, KeyScope, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// let claim = KeyClaim {
    ///     scope: KeyScope::default(),
    ///     key: "8f14e45fceea167a5a36dedd4bea2543".parse()?,
    ///     message_id: "m-1".into(),
    ///     task_id: "t-1".into(),
    ///     charged_to: None,
    /// };
    /// store.claim_idempotency_key(&claim).await?;
    /// assert_eq!(store.idempotency_key_count(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn idempotency_key_count(&self) -> usize {
        self.total(Shard::key_count)
    }

    /// How many idempotency keys `tenant` holds (in a store that is not tenant-aware, every
    /// tenant's keys are counted together, as the limits count them).
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, KeyClaim, KeyScope, TaskStore, InMemoryStoreConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::with_config(InMemoryStoreConfig::default().with_tenant_aware(true));
    /// let claim = KeyClaim {
    ///     scope: KeyScope { tenant: "acme".into(), caller: None },
    ///     key: "8f14e45fceea167a5a36dedd4bea2543".parse()?,
    ///     message_id: "m-1".into(),
    ///     task_id: "t-1".into(),
    ///     charged_to: None,
    /// };
    /// store.claim_idempotency_key(&claim).await?;
    /// assert_eq!((store.tenant_key_count("acme"), store.tenant_key_count("other")), (1, 0));
    /// # Ok(())
    /// # }
    /// ```
    pub fn tenant_key_count(&self, tenant: &str) -> usize {
        self.existing(tenant).map_or(0, |s| lock(&s).key_count())
    }

    /// How many tasks are held, across tenants.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore, TaskWrite};
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
    /// store.write(&TaskWrite::create("", &task)).await?;
    /// assert_eq!(store.task_count(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn task_count(&self) -> usize {
        self.total(Shard::task_count)
    }

    /// How many tenants have a namespace now (always 1 in a store that is not tenant-aware).
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, InMemoryStoreConfig};
    ///
    /// let store = InMemoryTaskStore::with_config(InMemoryStoreConfig::default().with_tenant_aware(true));
    /// assert_eq!(store.tenant_count(), 0);
    /// ```
    pub fn tenant_count(&self) -> usize {
        match &self.layout {
            Layout::Shared(_) => 1,
            Layout::PerTenant(tenants) => tenants.count(),
        }
    }

    /// Whether each tenant has its own namespace.
    ///
    /// ```
    /// use a2a_protocol_server::store::InMemoryTaskStore;
    ///
    /// assert!(!InMemoryTaskStore::new().is_tenant_aware());
    /// ```
    pub fn is_tenant_aware(&self) -> bool {
        matches!(self.layout, Layout::PerTenant(_))
    }
}

impl std::fmt::Debug for InMemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryTaskStore")
            .field("tenant_aware", &self.is_tenant_aware())
            .finish_non_exhaustive()
    }
}

impl Default for InMemoryTaskStore {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl TaskStore for InMemoryTaskStore {
    async fn load(
        &self,
        tenant: &str,
        id: &TaskId,
        known: Option<u64>,
    ) -> Result<Loaded, StoreError> {
        Ok(self
            .existing(tenant)
            .map_or(Loaded::Missing, |s| lock(&s).load(id, known)))
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        Ok(self
            .existing(tenant)
            .map(|s| lock(&s).list(query))
            .unwrap_or_default())
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        lock(&*self.shard(write.tenant)?).write(write)
    }

    fn supports_idempotency(&self) -> bool {
        true
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        lock(&*self.shard(&claim.scope.tenant)?).claim(claim)
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        if let Some(shard) = self.existing(&claim.scope.tenant) {
            lock(&shard).release(claim);
        }
        Ok(())
    }

    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        Ok(self
            .existing(&claim.scope.tenant)
            .and_then(|s| lock(&s).find_key(claim)))
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::default().with_push(self)
    }
}

#[async_trait]
impl PushStore for InMemoryTaskStore {
    async fn save_push_config(
        &self,
        tenant: &str,
        config: &TaskPushNotificationConfig,
        max_per_task: usize,
    ) -> Result<PushConfigSaved, StoreError> {
        match self.existing(tenant) {
            Some(shard) => lock(&shard).save_push_config(config, max_per_task),
            None => Ok(PushConfigSaved::TaskMissing),
        }
    }

    async fn get_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        Ok(self
            .existing(tenant)
            .and_then(|s| lock(&s).get_push_config(task_id, id)))
    }

    async fn list_push_configs(
        &self,
        tenant: &str,
        task_id: &TaskId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        Ok(self
            .existing(tenant)
            .map(|s| lock(&s).list_push_configs(task_id, after, limit))
            .unwrap_or_default())
    }

    async fn delete_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<bool, StoreError> {
        Ok(self
            .existing(tenant)
            .is_some_and(|s| lock(&s).delete_push_config(task_id, id)))
    }

    async fn claim_push_deliveries(
        &self,
        claimant: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        let now = SystemTime::now();
        let (from, until) = (epoch_millis(now), epoch_millis(now + lease));
        let mut claimed = Vec::new();
        for shard in self.all() {
            let room = limit.saturating_sub(claimed.len());
            if room == 0 {
                break;
            }
            claimed.extend(lock(&shard).claim_push_deliveries(claimant, from, until, room));
        }
        Ok(claimed)
    }

    async fn settle_push_delivery(
        &self,
        claimant: &str,
        delivery: &PushDelivery,
        settled: &DeliverySettled,
    ) -> Result<(), StoreError> {
        if let Some(shard) = self.existing(&delivery.tenant) {
            lock(&shard).settle_push_delivery(claimant, delivery, settled);
        }
        Ok(())
    }

    async fn dead_push_deliveries(&self, limit: usize) -> Result<Vec<PushDelivery>, StoreError> {
        let mut dead: Vec<PushDelivery> = Vec::new();
        for shard in self.all() {
            dead.extend(lock(&shard).dead_push_deliveries(limit));
        }
        dead.truncate(limit);
        Ok(dead)
    }
}
