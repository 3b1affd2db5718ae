//! The push outbox: notifications written with the event they announce, waiting for a
//! delivery worker. This module has the types every store shares and the in-memory queue.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{StreamResponse, TaskId};

/// One notification to deliver: an event of a task, for one of its push configs.
///
/// ```
/// use a2a_protocol_server::store::PushDelivery;
/// use a2a_protocol_types::push::TaskPushNotificationConfig;
/// use a2a_protocol_types::{StreamResponse, Task, TaskState, TaskStatus};
///
/// let config: TaskPushNotificationConfig =
///     serde_json::from_str(r#"{"id": "cfg-1", "taskId": "t-1", "url": "https://client.example/hook"}"#)?;
/// let event = StreamResponse::Task(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
/// let delivery = PushDelivery::new("", config, 3, event);
/// assert_eq!(delivery.delivery_id(), "t-1:cfg-1:3", "the same on every attempt");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PushDelivery {
    /// The tenant the task is stored under.
    pub tenant: String,
    /// Where to send it: the task's config as it is now.
    pub config: TaskPushNotificationConfig,
    /// The task generation the event carries; a receiver orders a task's events by it.
    pub generation: u64,
    /// The notification's body.
    pub event: StreamResponse,
    /// Failed attempts so far.
    pub attempts: u32,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
}

impl PushDelivery {
    /// A delivery not yet attempted.
    pub fn new(
        tenant: impl Into<String>,
        config: TaskPushNotificationConfig,
        generation: u64,
        event: StreamResponse,
    ) -> Self {
        Self {
            tenant: tenant.into(),
            config,
            generation,
            event,
            attempts: 0,
            last_error: None,
        }
    }

    /// The id a receiver drops duplicates by: the task, the config and the generation, so
    /// every attempt of one notification carries the same id and no two notifications do.
    pub fn delivery_id(&self) -> String {
        format!(
            "{}:{}:{}",
            self.config.task_id, self.config.id, self.generation
        )
    }
}

/// How an attempt to deliver a claimed [`PushDelivery`] ended.
///
/// ```
/// use std::time::{Duration, SystemTime};
///
/// use a2a_protocol_server::store::DeliverySettled;
///
/// let later = DeliverySettled::Retry { at: SystemTime::now() + Duration::from_secs(2), error: "HTTP 503".into() };
/// assert_ne!(later, DeliverySettled::Delivered);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeliverySettled {
    /// The webhook acknowledged it: the delivery is done and leaves the outbox.
    Delivered,
    /// It failed; try again at `at`.
    Retry {
        /// When the next attempt may start.
        at: SystemTime,
        /// What went wrong, for the dead-letter list.
        error: String,
    },
    /// It failed for the last time: keep it as a dead letter, which `a2a` can list.
    Dead {
        /// What went wrong.
        error: String,
    },
}

/// Milliseconds since the Unix epoch; the outbox's clock in every store.
pub(crate) fn epoch_millis(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// How many notifications an in-memory namespace holds before new ones go straight to the
/// dead letters: a webhook that is down must not grow the process without bound.
const MAX_PENDING: usize = 10_000;
/// How many dead letters an in-memory namespace keeps (the oldest go first).
const MAX_DEAD: usize = 1_000;

/// A notification waiting in memory.
struct Pending {
    tenant: String,
    generation: u64,
    event: Arc<StreamResponse>,
    attempts: u32,
    last_error: Option<String>,
    /// Not before this time (epoch millis).
    due: i64,
    /// Who holds it, and until when (epoch millis).
    claimed: Option<(String, i64)>,
}

/// The in-memory outbox of one namespace: per task and config, notifications in order.
#[derive(Default)]
pub(crate) struct MemoryOutbox {
    queues: BTreeMap<(TaskId, String), VecDeque<Pending>>,
    pending: usize,
    dead: VecDeque<PushDelivery>,
}

impl MemoryOutbox {
    /// Queues `event` for each of `configs`, all of task `task_id`.
    pub(crate) fn enqueue(
        &mut self,
        tenant: &str,
        configs: &[TaskPushNotificationConfig],
        generation: u64,
        event: &StreamResponse,
    ) {
        if configs.is_empty() {
            return;
        }
        let event = Arc::new(event.clone());
        let now = epoch_millis(SystemTime::now());
        for config in configs {
            if self.pending >= MAX_PENDING {
                let mut delivery = PushDelivery::new(
                    tenant,
                    config.clone(),
                    generation,
                    StreamResponse::clone(&event),
                );
                delivery.last_error = Some("the in-memory push outbox was full".to_owned());
                self.bury(delivery);
                continue;
            }
            self.queues
                .entry((config.task_id.clone(), config.id.clone()))
                .or_default()
                .push_back(Pending {
                    tenant: tenant.to_owned(),
                    generation,
                    event: Arc::clone(&event),
                    attempts: 0,
                    last_error: None,
                    due: now,
                    claimed: None,
                });
            self.pending += 1;
        }
    }

    /// Claims up to `limit` due notifications, the first waiting of each task and config
    /// only (so each config sees its task's events in order), for `claimant` until `until`.
    /// `config` gives a config as it is now; a notification whose config is gone is dropped.
    pub(crate) fn claim(
        &mut self,
        claimant: &str,
        now: i64,
        until: i64,
        limit: usize,
        config: impl Fn(&TaskId, &str) -> Option<TaskPushNotificationConfig>,
    ) -> Vec<PushDelivery> {
        let mut claimed = Vec::new();
        let mut orphaned = Vec::new();
        for ((task_id, config_id), queue) in &mut self.queues {
            if claimed.len() >= limit {
                break;
            }
            let Some(head) = queue.front_mut() else {
                continue;
            };
            if head.due > now || head.claimed.as_ref().is_some_and(|(_, t)| *t > now) {
                continue;
            }
            let Some(config) = config(task_id, config_id) else {
                orphaned.push((task_id.clone(), config_id.clone()));
                continue;
            };
            head.claimed = Some((claimant.to_owned(), until));
            let mut delivery = PushDelivery::new(
                head.tenant.clone(),
                config,
                head.generation,
                StreamResponse::clone(&head.event),
            );
            delivery.attempts = head.attempts;
            delivery.last_error = head.last_error.clone();
            claimed.push(delivery);
        }
        for key in orphaned {
            self.forget(&key.0, Some(&key.1));
        }
        claimed
    }

    /// Records how the claimed `delivery` went; nothing if `claimant` no longer holds it.
    pub(crate) fn settle(
        &mut self,
        claimant: &str,
        delivery: &PushDelivery,
        settled: &super::DeliverySettled,
    ) {
        let key = (delivery.config.task_id.clone(), delivery.config.id.clone());
        let Some(queue) = self.queues.get_mut(&key) else {
            return;
        };
        let Some(head) = queue.front_mut() else {
            return;
        };
        let held = head.generation == delivery.generation
            && head.claimed.as_ref().is_some_and(|(c, _)| c == claimant);
        if !held {
            return;
        }
        match settled {
            super::DeliverySettled::Retry { at, error } => {
                head.attempts += 1;
                head.last_error = Some(error.clone());
                head.due = epoch_millis(*at);
                head.claimed = None;
                return;
            }
            super::DeliverySettled::Delivered => {}
            super::DeliverySettled::Dead { error } => {
                let mut dead = delivery.clone();
                dead.attempts = head.attempts + 1;
                dead.last_error = Some(error.clone());
                self.bury(dead);
            }
        }
        self.pop(&key);
    }

    fn pop(&mut self, key: &(TaskId, String)) {
        if let Some(queue) = self.queues.get_mut(key) {
            if queue.pop_front().is_some() {
                self.pending -= 1;
            }
            if queue.is_empty() {
                self.queues.remove(key);
            }
        }
    }

    fn bury(&mut self, delivery: PushDelivery) {
        if self.dead.len() >= MAX_DEAD {
            self.dead.pop_front();
        }
        self.dead.push_back(delivery);
    }

    /// Drops what waits for task `task_id` (for config `config_id` only, when given): the
    /// task or the config is gone.
    pub(crate) fn forget(&mut self, task_id: &TaskId, config_id: Option<&str>) {
        let keys: Vec<_> = self
            .queues
            .range((task_id.clone(), String::new())..)
            .take_while(|((t, _), _)| t == task_id)
            .filter(|((_, c), _)| config_id.is_none_or(|id| id == c))
            .map(|(key, queue)| (key.clone(), queue.len()))
            .collect();
        for (key, len) in keys {
            self.queues.remove(&key);
            self.pending -= len;
        }
    }

    /// The dead letters, newest first.
    pub(crate) fn dead(&self, limit: usize) -> Vec<PushDelivery> {
        self.dead.iter().rev().take(limit).cloned().collect()
    }

    /// Whether nothing waits.
    pub(crate) fn is_idle(&self) -> bool {
        self.pending == 0
    }
}
