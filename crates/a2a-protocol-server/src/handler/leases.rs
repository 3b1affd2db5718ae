//! The lease extension's server side: a leased task is canceled when its lease lapses without
//! renewal; a `GetTask` that activates the extension renews it. With a store several processes
//! share, leases live in the store, so a renewal that reaches any of them renews, and whichever
//! finds a lapsed lease first cancels its task; otherwise they live in this process.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use a2a_protocol_types::lease::{Lease, MIN_LEASE_TTL_MS};
use a2a_protocol_types::{A2aError, CancelTaskRequest, TaskId};
use tokio::time::Instant;

use super::{CallContext, Inner, RequestHandler};
use crate::store::Offers;
use crate::store::TaskRef;

/// How often lapsed leases are looked for.
const SWEEP_EVERY: Duration = Duration::from_millis(50);

type Key = (String, TaskId);

pub(crate) struct Leases {
    max_ttl: Duration,
    table: Mutex<HashMap<Key, (Instant, Duration)>>,
    watching: AtomicBool,
}

impl Leases {
    pub(crate) fn new(max_ttl: Duration) -> Self {
        Self {
            max_ttl,
            table: Mutex::default(),
            watching: AtomicBool::new(false),
        }
    }

    fn table(&self) -> MutexGuard<'_, HashMap<Key, (Instant, Duration)>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks a requested lease against the bounds.
    pub(crate) fn check(&self, lease: &Lease) -> Result<(), A2aError> {
        if lease.ttl() > self.max_ttl {
            let problem = format!(
                "ttlMs {} is longer than this agent allows ({} ms); grant between {MIN_LEASE_TTL_MS} and {} ms",
                lease.ttl_ms,
                self.max_ttl.as_millis(),
                self.max_ttl.as_millis()
            );
            return Err(A2aError::invalid_params(format!("lease: {problem}"))
                .with_field_violation("message.metadata", problem));
        }
        Ok(())
    }

    /// Starts (or restarts) the lease of a task, and the watcher if it is not running.
    pub(crate) fn grant(&self, inner: &Arc<Inner>, tenant: &str, id: &TaskId, lease: Lease) {
        self.table().insert(
            (tenant.to_owned(), id.clone()),
            (Instant::now() + lease.ttl(), lease.ttl()),
        );
        if !self.watching.swap(true, Ordering::SeqCst) {
            tokio::spawn(watch(Arc::downgrade(inner)));
        }
    }

    /// Renews the lease of a task, if it has one.
    pub(crate) fn renew(&self, tenant: &str, id: &TaskId) {
        if let Some((deadline, ttl)) = self.table().get_mut(&(tenant.to_owned(), id.clone())) {
            *deadline = Instant::now() + *ttl;
        }
    }

    /// Forgets the lease of a task that settled.
    pub(crate) fn release(&self, tenant: &str, id: &TaskId) {
        self.table().remove(&(tenant.to_owned(), id.clone()));
    }

    fn lapsed(&self) -> Vec<Key> {
        let now = Instant::now();
        let mut table = self.table();
        let lapsed: Vec<Key> = table
            .iter()
            .filter(|(_, (deadline, _))| *deadline <= now)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &lapsed {
            table.remove(key);
        }
        lapsed
    }
}

/// Cancels tasks whose lease lapsed, until the handler is gone.
async fn watch(inner: Weak<Inner>) {
    loop {
        tokio::time::sleep(SWEEP_EVERY).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let Some(leases) = &inner.services.leases else {
            return;
        };
        let lapsed = leases.lapsed();
        let handler = RequestHandler {
            inner: Arc::clone(&inner),
        };
        for (tenant, id) in lapsed {
            tracing::info!(task_id = %id, "lease lapsed without renewal; canceling the task");
            let request = CancelTaskRequest {
                tenant,
                id,
                metadata: None,
            };
            if let Err(error) = handler.cancel_task(request, &CallContext::default()).await {
                tracing::debug!(%error, "the leased task had already settled");
            }
        }
    }
}

impl RequestHandler {
    /// Leases the task just started, in the store when it keeps leases.
    pub(crate) async fn grant_lease(&self, tenant: &str, id: &TaskId, lease: Lease) {
        let Some(leases) = &self.inner.services.leases else {
            return;
        };
        match self.inner.store.coordination() {
            Some(coordination) => {
                let task = TaskRef::new(tenant, id);
                if let Err(error) = coordination.grant_lease(&task, lease.ttl()).await {
                    tracing::warn!(task_id = %id, %error, "could not record a lease");
                }
            }
            None => leases.grant(&self.inner, tenant, id, lease),
        }
    }

    /// Renews the task's lease, if it has one.
    pub(crate) async fn renew_lease(&self, tenant: &str, id: &TaskId) {
        let Some(leases) = &self.inner.services.leases else {
            return;
        };
        match self.inner.store.coordination() {
            Some(coordination) => {
                if let Err(error) = coordination.renew_lease(&TaskRef::new(tenant, id)).await {
                    tracing::warn!(task_id = %id, %error, "could not renew a lease");
                }
            }
            None => leases.renew(tenant, id),
        }
    }

    /// Forgets the lease of a task that settled. (A stored lease needs nothing: a finished
    /// task's lease never lapses.)
    pub(crate) async fn release_lease(&self, tenant: &str, id: &TaskId) {
        if let (Some(leases), None) = (&self.inner.services.leases, self.inner.store.coordination())
        {
            leases.release(tenant, id);
        }
    }

    /// Cancels the tasks whose stored leases lapsed; each is taken by one process only.
    pub(crate) async fn cancel_lapsed_leases(&self) {
        let (Some(_), Some(coordination)) =
            (&self.inner.services.leases, self.inner.store.coordination())
        else {
            return;
        };
        let lapsed = match coordination.take_lapsed_leases(100).await {
            Ok(lapsed) => lapsed,
            Err(error) => {
                tracing::warn!(%error, "could not look for lapsed leases");
                return;
            }
        };
        for task in lapsed {
            tracing::info!(task_id = %task.id, "lease lapsed without renewal; canceling the task");
            let request = CancelTaskRequest {
                tenant: task.tenant,
                id: task.id,
                metadata: None,
            };
            if let Err(error) = self.cancel_task(request, &CallContext::default()).await {
                tracing::debug!(%error, "the leased task had already settled");
            }
        }
    }
}
