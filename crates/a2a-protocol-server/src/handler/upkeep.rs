//! What a process sharing its store with others keeps up in the background: its heartbeat,
//! recovery of turns whose process was lost, the cancels other processes ask of it, and lapsed
//! leases. Nothing runs for a store one process uses alone.

use std::sync::{Arc, Weak};
use std::time::Duration;

use a2a_protocol_types::A2aError;
use tokio::sync::OnceCell;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Inner, RequestHandler};
use crate::store::Notice;
use crate::store::Offers;

/// How often lapsed leases are looked for: a lease is at least a second long.
const LEASE_CHECKS: Duration = Duration::from_millis(200);

#[derive(Default)]
pub(crate) struct Upkeep {
    started: OnceCell<()>,
    stop: CancellationToken,
}

impl Upkeep {
    /// Starts the upkeep, once: the heartbeat is written before anything else, so no turn
    /// of this process is ever recorded without one.
    pub(crate) async fn ensure_started(&self, inner: &Arc<Inner>) -> Result<(), A2aError> {
        if inner.store.coordination().is_none() {
            return Ok(());
        }
        self.started
            .get_or_try_init(|| async {
                if let Some(coordination) = inner.store.coordination() {
                    let pace = Pace::of(inner.config.recovery_time);
                    coordination
                        .heartbeat(&inner.services.owner, pace.heartbeat_ttl)
                        .await?;
                }
                tokio::spawn(run(Arc::downgrade(inner), self.stop.clone()));
                Ok::<(), A2aError>(())
            })
            .await
            .map(|_| ())
    }

    /// Stops the upkeep (at shutdown).
    pub(crate) fn stop(&self) {
        self.stop.cancel();
    }
}

/// How often each duty runs for a recovery time `R`: a lost process's heartbeat lapses within
/// `R - R/6` of its last beat and the next recovery sweep, at most `R/6` later, settles its
/// turns, so they are settled within `R`. Three beats fit in a heartbeat's life.
struct Pace {
    heartbeat_ttl: Duration,
    heartbeat_every: Duration,
    recover_every: Duration,
}

impl Pace {
    fn of(recovery_time: Duration) -> Self {
        let recover_every =
            (recovery_time / 6).clamp(Duration::from_millis(50), Duration::from_secs(5));
        let heartbeat_ttl = recovery_time.saturating_sub(recover_every);
        Self {
            heartbeat_ttl,
            heartbeat_every: heartbeat_ttl / 3,
            recover_every,
        }
    }
}

/// The upkeep loop: each duty at its own pace, woken early by the store's cancel notices.
async fn run(inner: Weak<Inner>, stop: CancellationToken) {
    let (recovery_time, mut notices) = match inner.upgrade() {
        Some(inner) => (
            inner.config.recovery_time,
            inner.store.coordination().and_then(|c| c.notices()),
        ),
        None => return,
    };
    let poll = match inner
        .upgrade()
        .and_then(|i| i.store.coordination().map(|c| c.poll_interval()))
    {
        Some(poll) => poll,
        None => return,
    };
    let Pace {
        heartbeat_ttl,
        heartbeat_every,
        recover_every,
    } = Pace::of(recovery_time);
    let now = Instant::now();
    let (mut next_heartbeat, mut next_recovery, mut next_cancels, mut next_leases) =
        (now + heartbeat_every, now, now, now);
    loop {
        let next = next_heartbeat
            .min(next_recovery)
            .min(next_cancels)
            .min(next_leases);
        let cancel_noticed = async {
            match &mut notices {
                Some(receiver) => loop {
                    match receiver.recv().await {
                        Ok(Notice::CancelRequested(_))
                        | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                        Ok(_) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                            std::future::pending::<()>().await;
                        }
                    }
                },
                None => std::future::pending().await,
            }
        };
        let woken_for_cancel = tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep_until(next) => false,
            () = cancel_noticed => true,
        };
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let handler = RequestHandler::from_inner(inner);
        let Some(coordination) = handler.inner.store.coordination() else {
            return;
        };
        let now = Instant::now();
        if now >= next_heartbeat {
            if let Err(error) = coordination
                .heartbeat(&handler.inner.services.owner, heartbeat_ttl)
                .await
            {
                tracing::warn!(%error, "could not renew this process's heartbeat");
            }
            next_heartbeat = now + heartbeat_every;
        }
        if woken_for_cancel || now >= next_cancels {
            handler.answer_cancel_requests().await;
            next_cancels = now + poll;
        }
        if now >= next_recovery {
            handler.recover_orphans().await;
            next_recovery = now + recover_every;
        }
        if now >= next_leases {
            handler.cancel_lapsed_leases().await;
            next_leases = now + LEASE_CHECKS;
        }
    }
}

impl RequestHandler {
    /// Starts keeping this process's turns up in a shared store: its heartbeat, recovery of
    /// lost processes' turns, cancel requests and lapsed leases. The first send starts it in
    /// any case; [`A2aServer::serve`](crate::A2aServer::serve) starts it at once.
    pub(crate) async fn start_upkeep(&self) -> Result<(), A2aError> {
        self.inner.services.upkeep.ensure_started(&self.inner).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_process_is_recovered_within_the_recovery_time() {
        for seconds in [1, 2, 30, 120] {
            let recovery = Duration::from_secs(seconds);
            let pace = Pace::of(recovery);
            assert!(
                pace.heartbeat_ttl + pace.recover_every <= recovery,
                "{seconds} s"
            );
            assert!(
                pace.heartbeat_every * 3 <= pace.heartbeat_ttl,
                "{seconds} s"
            );
        }
    }
}
