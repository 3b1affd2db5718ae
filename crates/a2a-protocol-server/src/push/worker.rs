//! The delivery worker: claims due notifications from the store's outbox and sends them, each
//! on its own task, so a slow or dead webhook holds up only its own task's notifications.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::PushSettings;
use super::sender::Sender;
use crate::store::Offers;
use crate::store::{DeliverySettled, PushDelivery, TaskStore};

/// Push delivery for one handler: its settings, and the worker, which stops when this is
/// dropped or [`PushRuntime::stop`] is called.
pub(crate) struct PushRuntime {
    pub(crate) settings: PushSettings,
    stop: CancellationToken,
    started: std::sync::Once,
    sender: Arc<Sender>,
}

impl PushRuntime {
    pub(crate) fn new(settings: PushSettings) -> Result<Self, reqwest::Error> {
        Ok(Self {
            sender: Arc::new(Sender::new(&settings)?),
            settings,
            stop: CancellationToken::new(),
            started: std::sync::Once::new(),
        })
    }

    /// Starts the worker once, when a Tokio runtime is there to run it.
    pub(crate) fn ensure_started(&self, store: &Arc<dyn TaskStore>, owner: &Arc<str>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        self.started.call_once(|| {
            runtime.spawn(run(
                Arc::clone(store),
                Arc::clone(owner),
                self.settings.clone(),
                Arc::clone(&self.sender),
                self.stop.clone(),
            ));
        });
    }

    /// Stops claiming notifications (at shutdown). Claims in flight lapse and are taken up
    /// again, by this process after a restart or by another sharing the store.
    pub(crate) fn stop(&self) {
        self.stop.cancel();
    }
}

impl Drop for PushRuntime {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// How long a claim lasts: an attempt ends within the request timeout, so a claim outliving
/// it by this much is one whose process is gone.
fn lease_for(settings: &PushSettings) -> Duration {
    settings.request_timeout.saturating_mul(2) + Duration::from_secs(5)
}

async fn run(
    store: Arc<dyn TaskStore>,
    owner: Arc<str>,
    settings: PushSettings,
    sender: Arc<Sender>,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(settings.concurrency));
    // Rung when a delivery settles: its slot is free, and its task's next notification may
    // now be claimed. Without it, a full set of slots (or a task's next event) waited for the
    // poll interval, which capped delivery at `concurrency` per interval.
    let settled = Arc::new(tokio::sync::Notify::new());
    let lease = lease_for(&settings);
    loop {
        let room = slots.available_permits();
        let claimed = if room == 0 {
            Vec::new()
        } else {
            let claim = match store.push() {
                Some(push) => push.claim_push_deliveries(&owner, lease, room).await,
                None => Err(crate::store::StoreError::Unsupported),
            };
            match claim {
                Ok(claimed) => claimed,
                Err(error) => {
                    tracing::warn!(%error, "could not read the push outbox; trying again");
                    Vec::new()
                }
            }
        };
        let full = room > 0 && claimed.len() == room;
        for delivery in claimed {
            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                return;
            };
            let store = Arc::clone(&store);
            let owner = Arc::clone(&owner);
            let sender = Arc::clone(&sender);
            let settings = settings.clone();
            let settled = Arc::clone(&settled);
            tokio::spawn(async move {
                deliver(&*store, &owner, &sender, &settings, delivery).await;
                drop(slot);
                settled.notify_one();
            });
        }
        if full {
            // More may be due: look again at once, unless stopping.
            if stop.is_cancelled() {
                return;
            }
            continue;
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = settled.notified() => {}
            () = tokio::time::sleep(settings.poll_interval) => {}
        }
    }
}

/// One attempt at `delivery`, and its outcome recorded in the store.
async fn deliver(
    store: &dyn TaskStore,
    owner: &str,
    sender: &Sender,
    settings: &PushSettings,
    delivery: PushDelivery,
) {
    let started = std::time::Instant::now();
    let result = sender.send(&delivery).await;
    let attempt = delivery.attempts + 1;
    let settled = match result {
        Ok(()) => DeliverySettled::Delivered,
        Err(failure) if failure.permanent || attempt >= settings.max_attempts => {
            DeliverySettled::Dead {
                error: failure.reason,
            }
        }
        Err(failure) => DeliverySettled::Retry {
            at: SystemTime::now() + settings.retry_after(delivery.attempts),
            error: failure.reason,
        },
    };
    let outcome = match &settled {
        DeliverySettled::Delivered => "delivered",
        DeliverySettled::Retry { .. } => "retry",
        DeliverySettled::Dead { .. } => "dead",
    };
    metrics::counter!("a2a_push_deliveries_total", "outcome" => outcome).increment(1);
    metrics::histogram!("a2a_push_delivery_seconds", "outcome" => outcome)
        .record(started.elapsed().as_secs_f64());
    match &settled {
        DeliverySettled::Delivered => tracing::debug!(
            delivery_id = %delivery.delivery_id(), attempt, "push notification delivered"
        ),
        DeliverySettled::Retry { error, .. } => tracing::info!(
            delivery_id = %delivery.delivery_id(), attempt, error = %error,
            "push notification failed; it will be retried"
        ),
        DeliverySettled::Dead { error } => tracing::warn!(
            delivery_id = %delivery.delivery_id(), attempt, error = %error,
            "push notification given up; it is kept as a dead letter"
        ),
    }
    let settle = match store.push() {
        Some(push) => push.settle_push_delivery(owner, &delivery, &settled).await,
        None => Err(crate::store::StoreError::Unsupported),
    };
    if let Err(error) = settle {
        // The claim lapses and the notification is attempted again: at least once holds.
        tracing::warn!(%error, delivery_id = %delivery.delivery_id(), "could not record a push attempt");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use a2a_protocol_types::push::TaskPushNotificationConfig;
    use a2a_protocol_types::{StreamResponse, Task, TaskState, TaskStatus};

    use super::*;
    use crate::store::{InMemoryTaskStore, TaskWrite};

    /// Regression: with every slot taken, the worker waited a whole poll interval before
    /// claiming again, however soon the deliveries ended, so it delivered at most
    /// `concurrency` notifications per interval (128 a second by default).
    #[tokio::test]
    async fn a_settled_delivery_frees_its_slot_for_the_next_at_once() {
        let received = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&received);
        let app = axum::Router::new().fallback(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { axum::http::StatusCode::OK }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });

        let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
        const TASKS: usize = 6;
        for n in 0..TASKS {
            let id = format!("t{n}");
            let config: TaskPushNotificationConfig =
                serde_json::from_value(serde_json::json!({"taskId": id, "id": id, "url": url}))
                    .expect("a config");
            let mut task = Task::new(id.as_str(), "c", TaskStatus::new(TaskState::Submitted));
            task.generation = 1;
            store
                .write(
                    &TaskWrite::create("", &Arc::new(task.clone())).with_push_config(Some(&config)),
                )
                .await
                .expect("created");
            task.generation = 2;
            task.status = TaskStatus::new(TaskState::Working);
            let event = StreamResponse::Task(task.clone());
            store
                .write(&TaskWrite::update("", &Arc::new(task), 1).with_event(&event))
                .await
                .expect("an event");
        }

        // One slot and a poll interval no test waits out: only settling can drive it.
        let settings = PushSettings::default()
            .with_allowed(vec!["127.0.0.1".parse().expect("a range")])
            .with_concurrency(1)
            .with_poll_interval(Duration::from_secs(3600));
        let sender = Arc::new(Sender::new(&settings).expect("a client"));
        let stop = CancellationToken::new();
        tokio::spawn(run(store, Arc::from("p1"), settings, sender, stop.clone()));
        for _ in 0..400 {
            if received.load(Ordering::SeqCst) >= TASKS {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stop.cancel();
        assert_eq!(
            received.load(Ordering::SeqCst),
            TASKS,
            "every notification delivered"
        );
    }
}
