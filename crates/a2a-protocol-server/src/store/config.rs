//! How the in-memory store partitions and bounds what it holds.

use std::time::Duration;

/// How the in-memory store keeps things: in one namespace or one per tenant, for how long,
/// and how many. (The SQL stores keep everything until a retention sweep deletes it, see
/// [`RetentionPolicy`](crate::store::RetentionPolicy), and take their settings from
/// [`SqlStoreOptions`](crate::store::SqlStoreOptions).)
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_server::store::InMemoryStoreConfig;
///
/// let config = InMemoryStoreConfig::default();
/// assert_eq!(config.idempotency_key_ttl, Duration::from_secs(24 * 60 * 60));
/// assert_eq!((config.max_idempotency_keys, config.max_tasks), (100_000, 10_000));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InMemoryStoreConfig {
    /// Whether each tenant has its own namespace of tasks and keys, with its own limits, so a
    /// task of tenant A is invisible to tenant B. Default `false`: tasks share one namespace
    /// whatever the request's tenant (keys are scoped by tenant either way).
    pub tenant_aware: bool,
    /// How long an idempotency key is held after its claim. A retry that arrives later is a
    /// new send. Default 24 hours.
    pub idempotency_key_ttl: Duration,
    /// The most keys held at once (per tenant in a tenant-aware store). A send with a new key
    /// past it is refused as temporarily unavailable; a live key is never evicted.
    /// Default 100 000.
    pub max_idempotency_keys: usize,
    /// The most of those keys one holder may hold at once while the index is at least half
    /// full: an authenticated caller, or a client's network when there is none (see
    /// [`KeyClaim::charged_to`]). A client alone may use half the index; past that, no one
    /// holds more than this, so one client cannot fill the index and lock everyone else out.
    /// Default 10 000 (a tenth of the total).
    ///
    /// [`KeyClaim::charged_to`]: crate::store::KeyClaim::charged_to
    pub max_idempotency_keys_per_holder: usize,
    /// The most of those keys all clients without a caller identity hold together (each is
    /// charged by network, see [`KeyClaim::charged_to`]). Addresses are cheap (a /48 of IPv6
    /// holds 65 536 networks), so without this a crowd of them could fill the index and leave
    /// authenticated callers nothing; with it, the rest of the index is theirs. A server with
    /// no authentication at all may raise it to `max_idempotency_keys`. Default 50 000 (half
    /// the default index).
    ///
    /// [`KeyClaim::charged_to`]: crate::store::KeyClaim::charged_to
    pub max_unauthenticated_idempotency_keys: usize,
    /// How long a terminal task is kept after it settles. Default 1 hour.
    pub terminal_task_ttl: Duration,
    /// The most tasks held at once (per tenant in a tenant-aware store). Past it the oldest
    /// terminal tasks are evicted; a running task never is. Default 10 000.
    pub max_tasks: usize,
    /// The most tenants a tenant-aware in-memory store holds at once. Past it a tenant holding
    /// nothing, then one holding only finished tasks (which would go to make room anyway),
    /// gives way to a new one; a tenant with an unfinished task or a live key never does, and
    /// a write for a new tenant is then refused as temporarily unavailable, until the first
    /// of those keys expires. Default 10 000.
    pub max_tenants: usize,
    /// The most bytes of task content (messages, artifacts, metadata; estimated) held at once,
    /// across all tenants of a tenant-aware store. Past it the oldest terminal tasks are
    /// evicted; when only running tasks are left, a write that would grow the total is
    /// refused as temporarily unavailable. Default 256 MiB.
    pub max_task_bytes: usize,
}

impl Default for InMemoryStoreConfig {
    fn default() -> Self {
        Self {
            tenant_aware: false,
            idempotency_key_ttl: Duration::from_secs(24 * 60 * 60),
            max_idempotency_keys: 100_000,
            max_idempotency_keys_per_holder: 10_000,
            max_unauthenticated_idempotency_keys: 50_000,
            terminal_task_ttl: Duration::from_secs(60 * 60),
            max_tasks: 10_000,
            max_tenants: 10_000,
            max_task_bytes: 256 * 1024 * 1024,
        }
    }
}

impl InMemoryStoreConfig {
    /// Sets [`InMemoryStoreConfig::tenant_aware`].
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, InMemoryStoreConfig};
    ///
    /// let store = InMemoryTaskStore::with_config(InMemoryStoreConfig::default().with_tenant_aware(true));
    /// assert!(store.is_tenant_aware());
    /// ```
    pub fn with_tenant_aware(mut self, tenant_aware: bool) -> Self {
        self.tenant_aware = tenant_aware;
        self
    }

    /// Sets [`InMemoryStoreConfig::idempotency_key_ttl`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::InMemoryStoreConfig;
    ///
    /// let config = InMemoryStoreConfig::default().with_idempotency_key_ttl(Duration::from_secs(3600));
    /// assert_eq!(config.idempotency_key_ttl.as_secs(), 3600);
    /// ```
    pub fn with_idempotency_key_ttl(mut self, ttl: Duration) -> Self {
        self.idempotency_key_ttl = ttl;
        self
    }

    /// Sets [`InMemoryStoreConfig::max_idempotency_keys`].
    ///
    /// ```
    /// use a2a_protocol_server::store::InMemoryStoreConfig;
    ///
    /// assert_eq!(InMemoryStoreConfig::default().with_max_idempotency_keys(10).max_idempotency_keys, 10);
    /// ```
    pub fn with_max_idempotency_keys(mut self, max: usize) -> Self {
        self.max_idempotency_keys = max;
        self
    }

    /// Sets [`InMemoryStoreConfig::max_idempotency_keys_per_holder`].
    ///
    /// ```
    /// use a2a_protocol_server::store::InMemoryStoreConfig;
    ///
    /// let config = InMemoryStoreConfig::default().with_max_idempotency_keys_per_holder(50);
    /// assert_eq!(config.max_idempotency_keys_per_holder, 50);
    /// ```
    pub fn with_max_idempotency_keys_per_holder(mut self, max: usize) -> Self {
        self.max_idempotency_keys_per_holder = max;
        self
    }

    /// Sets [`InMemoryStoreConfig::max_unauthenticated_idempotency_keys`].
    ///
    /// ```
    /// use a2a_protocol_server::store::InMemoryStoreConfig;
    ///
    /// let config = InMemoryStoreConfig::default().with_max_unauthenticated_idempotency_keys(1_000);
    /// assert_eq!(config.max_unauthenticated_idempotency_keys, 1_000);
    /// ```
    pub fn with_max_unauthenticated_idempotency_keys(mut self, max: usize) -> Self {
        self.max_unauthenticated_idempotency_keys = max;
        self
    }

    /// Sets [`InMemoryStoreConfig::terminal_task_ttl`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::InMemoryStoreConfig;
    ///
    /// let config = InMemoryStoreConfig::default().with_terminal_task_ttl(Duration::from_secs(60));
    /// assert_eq!(config.terminal_task_ttl, Duration::from_secs(60));
    /// ```
    pub fn with_terminal_task_ttl(mut self, ttl: Duration) -> Self {
        self.terminal_task_ttl = ttl;
        self
    }

    /// Sets [`InMemoryStoreConfig::max_tasks`].
    ///
    /// ```
    /// use a2a_protocol_server::store::InMemoryStoreConfig;
    ///
    /// assert_eq!(InMemoryStoreConfig::default().with_max_tasks(500).max_tasks, 500);
    /// ```
    pub fn with_max_tasks(mut self, max: usize) -> Self {
        self.max_tasks = max;
        self
    }

    /// Sets [`InMemoryStoreConfig::max_task_bytes`].
    ///
    /// ```
    /// use a2a_protocol_server::store::InMemoryStoreConfig;
    ///
    /// let config = InMemoryStoreConfig::default().with_max_task_bytes(64 * 1024 * 1024);
    /// assert_eq!(config.max_task_bytes, 64 * 1024 * 1024);
    /// ```
    pub fn with_max_task_bytes(mut self, bytes: usize) -> Self {
        self.max_task_bytes = bytes;
        self
    }

    /// Sets [`InMemoryStoreConfig::max_tenants`].
    ///
    /// ```
    /// use a2a_protocol_server::store::InMemoryStoreConfig;
    ///
    /// assert_eq!(InMemoryStoreConfig::default().with_max_tenants(100).max_tenants, 100);
    /// ```
    pub fn with_max_tenants(mut self, max: usize) -> Self {
        self.max_tenants = max;
        self
    }
}
