//! What runs beside the requests, as one value: this process's name in a store several
//! processes share, the heartbeat and recovery kept up in the background ([`upkeep`]), the
//! leases that turn a parent's silence into cancellation, push delivery, and shutdown.
//!
//! [`upkeep`]: super::upkeep

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use tokio_util::sync::CancellationToken;

use super::leases::Leases;
use super::upkeep::Upkeep;

pub(crate) struct Services {
    /// This process, as turn owners are recorded in a store several processes share.
    pub(crate) owner: Arc<str>,
    /// Heartbeat, recovery, cancel requests and lapsed leases, kept up in the background.
    pub(crate) upkeep: Upkeep,
    /// Lease checks and grants, when the agent grants leases.
    pub(crate) leases: Option<Leases>,
    /// Set once shutdown begins: new sends are refused, retryably.
    pub(crate) draining: AtomicBool,
    /// Cancelled when shutdown ends: whatever still waits on a task (a stream, a blocking
    /// retry) answers with what it has.
    pub(crate) stopped: CancellationToken,
    /// Push notification delivery, when on.
    #[cfg(feature = "push")]
    pub(crate) push: Option<crate::push::worker::PushRuntime>,
}

impl Services {
    pub(crate) fn new(
        leases: Option<Leases>,
        #[cfg(feature = "push")] push: Option<crate::push::worker::PushRuntime>,
    ) -> Self {
        Self {
            owner: Arc::from(uuid::Uuid::new_v4().to_string()),
            upkeep: Upkeep::default(),
            leases,
            draining: AtomicBool::new(false),
            stopped: CancellationToken::new(),
            #[cfg(feature = "push")]
            push,
        }
    }
}
