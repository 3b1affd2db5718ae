//! The per-tenant namespaces of a tenant-aware in-memory store: each tenant has its own tasks,
//! keys and limits, and a tenant with nothing left makes room for a new one.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::shard::Shard;
use super::{InMemoryStoreConfig, StoreError};

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave a shard half-updated in a way that matters
    // more than losing the store, so keep serving.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every tenant's namespace, made on its first write.
pub(crate) struct Tenants {
    config: InMemoryStoreConfig,
    tenants: Mutex<HashMap<String, Arc<Mutex<Shard>>>>,
    /// The task bytes all tenants hold together.
    task_bytes: Arc<AtomicUsize>,
}

impl Tenants {
    pub(crate) fn new(config: InMemoryStoreConfig) -> Self {
        Self {
            config,
            tenants: Mutex::new(HashMap::new()),
            task_bytes: Arc::default(),
        }
    }

    /// The tenant's namespace, made if it is new and there is room: at
    /// [`InMemoryStoreConfig::max_tenants`], a tenant that holds nothing gives way first, then
    /// one that holds only finished tasks; a tenant with an unfinished task or a live key
    /// never does, and a new tenant is then told when the first of those keys expires.
    pub(crate) fn shard(&self, tenant: &str) -> Result<Arc<Mutex<Shard>>, StoreError> {
        let mut tenants = lock(&self.tenants);
        if let Some(shard) = tenants.get(tenant) {
            return Ok(Arc::clone(shard));
        }
        if tenants.len() >= self.config.max_tenants {
            let now = Instant::now();
            // Only a namespace nobody holds right now may go: every holder got it from this
            // map under this lock, so a count of one means no write is under way in it.
            let mut soonest: Option<Instant> = None;
            let mut finished_only: Option<String> = None;
            tenants.retain(|name, shard| {
                if Arc::strong_count(shard) > 1 {
                    return true;
                }
                let Ok(mut held) = shard.try_lock() else {
                    return true;
                };
                let empty = held.is_empty_after_expiry();
                match held.gives_way_at(now) {
                    Some(at) if at <= now && finished_only.is_none() && !empty => {
                        finished_only = Some(name.clone());
                    }
                    Some(at) if at > now => {
                        soonest = Some(soonest.map_or(at, |s| s.min(at)));
                    }
                    _ => {}
                }
                !empty
            });
            if tenants.len() >= self.config.max_tenants {
                match finished_only {
                    Some(name) => {
                        tenants.remove(&name);
                    }
                    None => {
                        return Err(match soonest {
                            Some(at) => StoreError::FullUntil {
                                what: "tenants",
                                retry_after: at.saturating_duration_since(now),
                            },
                            // Every tenant has an unfinished task: room comes when one ends.
                            None => StoreError::CapacityExceeded("tenants"),
                        });
                    }
                }
            }
        }
        let shard = Arc::new(Mutex::new(Shard::new(
            self.config.clone(),
            Arc::clone(&self.task_bytes),
        )));
        tenants.insert(tenant.to_owned(), Arc::clone(&shard));
        Ok(shard)
    }

    /// The tenant's namespace, if it has one.
    pub(crate) fn existing(&self, tenant: &str) -> Option<Arc<Mutex<Shard>>> {
        lock(&self.tenants).get(tenant).cloned()
    }

    pub(crate) fn count(&self) -> usize {
        lock(&self.tenants).len()
    }

    /// Every namespace, for totals.
    pub(crate) fn all(&self) -> Vec<Arc<Mutex<Shard>>> {
        lock(&self.tenants).values().cloned().collect()
    }
}
