//! One namespace of the in-memory stores: tasks, their list order, and the key index.
//!
//! Both expiries cost time proportional to what expires: keys and terminal tasks sit in
//! insertion-ordered maps, and with a fixed TTL insertion order is expiry order, so a sweep
//! pops from the front until it meets an entry that is still live.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{Task, TaskId};
use hashlink::LinkedHashMap;

use super::footprint;
use super::key_index::KeyIndex;
use super::push_outbox::MemoryOutbox;
use super::{
    ClaimOutcome, DeliverySettled, InMemoryStoreConfig, KeyClaim, PageCursor, PushConfigSaved,
    PushDelivery, StoreError, StoredTask, TaskPage, TaskQuery, TaskWrite, WriteOutcome,
};

use crate::TaskIdHasher;

fn status_millis(task: &Task) -> i64 {
    task.status.timestamp.map_or(0, |t| t.unix_millis())
}

/// A task as a shard holds it.
struct Held {
    task: Arc<Task>,
    revision: u64,
    /// Its estimated size in bytes.
    size: usize,
    /// The authenticated caller that created it.
    caller: Option<Arc<str>>,
    /// Its push notification configs, in order of id (counted in `size`).
    push: Vec<TaskPushNotificationConfig>,
}

impl Held {
    /// Where the push config `id` is, or would go, in `push`.
    fn push_position(&self, id: &str) -> Result<usize, usize> {
        self.push.binary_search_by(|c| c.id.as_str().cmp(id))
    }

    fn stored(&self, task: Task) -> StoredTask {
        StoredTask::new(task, self.revision).with_caller(self.caller.as_deref().map(str::to_owned))
    }
}

pub(crate) struct Shard {
    config: InMemoryStoreConfig,
    /// Shared with the live state of tasks being worked on, so a save copies nothing.
    tasks: HashMap<TaskId, Held, TaskIdHasher>,
    /// The task bytes held by this shard and any it shares the budget with.
    task_bytes: Arc<AtomicUsize>,
    /// (status time, id) of every task, for newest-first listing.
    order: BTreeSet<(i64, TaskId)>,
    /// Terminal tasks, oldest first, with when they were seen terminal.
    terminal: LinkedHashMap<TaskId, Instant, TaskIdHasher>,
    keys: KeyIndex,
    /// Notifications waiting for delivery, written with the events they announce.
    outbox: MemoryOutbox,
}

impl Shard {
    pub(crate) fn new(config: InMemoryStoreConfig, task_bytes: Arc<AtomicUsize>) -> Self {
        Self {
            config,
            tasks: HashMap::default(),
            task_bytes,
            order: BTreeSet::new(),
            terminal: LinkedHashMap::default(),
            keys: KeyIndex::new(),
            outbox: MemoryOutbox::default(),
        }
    }

    /// The task, or only its head and facts when it is still at revision `known` (see
    /// [`super::Loaded`]).
    pub(crate) fn load(&self, id: &TaskId, known: Option<u64>) -> super::Loaded {
        match self.tasks.get(id) {
            None => super::Loaded::Missing,
            Some(held) if Some(held.revision) == known => {
                super::Loaded::Unchanged(held.stored(super::write::head_of(&held.task)))
            }
            Some(held) => super::Loaded::Changed(held.stored(Task::clone(&held.task))),
        }
    }

    /// A versioned write, with its key claimed in the same step (see [`TaskWrite`]).
    pub(crate) fn write(&mut self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        let current = self
            .tasks
            .get(&write.task.id)
            .map(|held| (held.revision, held.task.status.state.is_terminal()));
        // A terminal task is never written over.
        let revision = match (write.expected, current) {
            (None, None) => 1,
            (Some(expected), Some((current, false))) if expected == current => current + 1,
            _ => return Ok(WriteOutcome::Stale),
        };
        if current.is_none() {
            self.make_room()?;
        }
        let size = self.size_after(write);
        self.make_room_for_bytes(&write.task.id, size)?;
        if let Some(claim) = write.claim {
            match self.claim(claim)? {
                ClaimOutcome::Claimed => {}
                held => return Ok(WriteOutcome::KeyHeld(held)),
            }
        }
        let caller = match (current, write.caller) {
            (None, Some(caller)) => Some(Arc::from(caller)),
            _ => None,
        };
        self.put(Arc::clone(write.task), revision, size, caller);
        if let (Some(config), Some(held)) = (write.push_config, self.tasks.get_mut(&write.task.id))
        {
            // Its bytes are in the size just written; a config it replaces goes.
            let replaced = match held.push_position(&config.id) {
                Ok(at) => footprint::push_config_bytes(&std::mem::replace(
                    &mut held.push[at],
                    config.clone(),
                )),
                Err(at) => {
                    held.push.insert(at, config.clone());
                    0
                }
            };
            held.size = held.size.saturating_sub(replaced);
            self.task_bytes.fetch_sub(replaced, Ordering::Relaxed);
        }
        if let Some(held) = self.tasks.get(&write.task.id) {
            // In the same step as the events: a notification is never missed nor early.
            // Its tenant is the one the task is kept under, as in the SQL stores.
            let tenant = if self.config.tenant_aware {
                write.tenant
            } else {
                ""
            };
            for (i, event) in write.events.iter().enumerate() {
                self.outbox
                    .enqueue(tenant, &held.push, write.event_generation(i), event);
            }
        }
        Ok(WriteOutcome::Written)
    }

    /// The size of the task once `write` is in: from what the write changed (the head and the
    /// messages it appends), so a write costs the same however long the history is.
    fn size_after(&self, write: &TaskWrite<'_>) -> usize {
        let config = write.push_config.map_or(0, footprint::push_config_bytes);
        config
            + match (write.expected, self.tasks.get(&write.task.id)) {
                (Some(_), Some(held)) => {
                    held.size.saturating_sub(footprint::head_bytes(&held.task))
                        + footprint::head_bytes(write.task)
                        + footprint::appended_bytes(write.task, write.new_messages)
                }
                _ => footprint::task_bytes(write.task),
            }
    }

    /// Room for task `id` to hold `size` bytes: the oldest terminal tasks go while the budget
    /// would be exceeded; a live task is never evicted, so with only live tasks left a write
    /// that grows the total is refused. A write that does not grow the task always passes.
    fn make_room_for_bytes(&mut self, id: &TaskId, size: usize) -> Result<(), StoreError> {
        let before = self.tasks.get(id).map_or(0, |held| held.size);
        let Some(growth) = size.checked_sub(before).filter(|g| *g > 0) else {
            return Ok(());
        };
        if self.task_bytes.load(Ordering::Relaxed) + growth <= self.config.max_task_bytes {
            return Ok(());
        }
        self.expire_terminal_tasks(Instant::now());
        while self.task_bytes.load(Ordering::Relaxed) + growth > self.config.max_task_bytes {
            let oldest_other = self
                .terminal
                .front()
                .map(|(oldest, _)| oldest.clone())
                .filter(|oldest| oldest != id);
            match oldest_other {
                Some(oldest) => self.remove_task(&oldest),
                None => return Err(StoreError::CapacityExceeded("task bytes")),
            }
        }
        Ok(())
    }

    /// Room for one more task: expired terminal tasks go, then the oldest terminal one if the
    /// store is full; a live task is never evicted.
    fn make_room(&mut self) -> Result<(), StoreError> {
        self.expire_terminal_tasks(Instant::now());
        if self.tasks.len() >= self.config.max_tasks && !self.evict_oldest_terminal() {
            return Err(StoreError::CapacityExceeded("tasks"));
        }
        Ok(())
    }

    /// Holds `task`; `caller` is recorded when the task is new (a task never changes hands).
    fn put(&mut self, task: Arc<Task>, revision: u64, size: usize, caller: Option<Arc<str>>) {
        let now = Instant::now();
        let millis = status_millis(&task);
        let previous = self
            .tasks
            .get(&task.id)
            .map(|held| status_millis(&held.task));
        match previous {
            // The list order changes only when the status time does.
            Some(before) if before == millis => {}
            Some(before) => {
                self.order.remove(&(before, task.id.clone()));
                self.order.insert((millis, task.id.clone()));
            }
            None => {
                self.order.insert((millis, task.id.clone()));
            }
        }
        if task.status.state.is_terminal() {
            if !self.terminal.contains_key(&task.id) {
                self.terminal.insert(task.id.clone(), now);
            }
        } else {
            self.terminal.remove(&task.id);
        }
        match self.tasks.get_mut(&task.id) {
            Some(held) => {
                self.task_bytes.fetch_sub(held.size, Ordering::Relaxed);
                held.task = task;
                held.revision = revision;
                held.size = size;
            }
            None => {
                let held = Held {
                    task: Arc::clone(&task),
                    revision,
                    size,
                    caller,
                    push: Vec::new(),
                };
                self.tasks.insert(task.id.clone(), held);
            }
        }
        self.task_bytes.fetch_add(size, Ordering::Relaxed);
    }

    fn remove_task(&mut self, id: &TaskId) {
        self.outbox.forget(id, None);
        if let Some(held) = self.tasks.remove(id) {
            self.task_bytes.fetch_sub(held.size, Ordering::Relaxed);
            self.order.remove(&(status_millis(&held.task), id.clone()));
        }
        self.terminal.remove(id);
    }

    fn expire_terminal_tasks(&mut self, now: Instant) {
        while let Some((id, since)) = self.terminal.front() {
            if now.saturating_duration_since(*since) < self.config.terminal_task_ttl {
                break;
            }
            let id = id.clone();
            self.remove_task(&id);
        }
    }

    fn evict_oldest_terminal(&mut self) -> bool {
        let Some((id, _)) = self.terminal.front() else {
            return false;
        };
        let id = id.clone();
        self.remove_task(&id);
        true
    }

    pub(crate) fn list(&mut self, query: &TaskQuery) -> TaskPage {
        self.expire_terminal_tasks(Instant::now());
        let matches = |held: &Held| {
            let task = &held.task;
            query
                .caller
                .as_deref()
                .is_none_or(|caller| held.caller.as_deref() == Some(caller))
                && query
                    .context_id
                    .as_ref()
                    .is_none_or(|c| &task.context_id == c)
                && query.status.is_none_or(|s| task.status.state == s)
                && query
                    .status_timestamp_after
                    .is_none_or(|after| status_millis(task) > after.unix_millis())
        };
        let mut total_size = 0;
        let mut page = Vec::new();
        let mut next = None;
        for (millis, id) in self.order.iter().rev() {
            let Some(held) = self.tasks.get(id) else {
                continue;
            };
            if !matches(held) {
                continue;
            }
            let task = &held.task;
            total_size += 1;
            let after_cursor = query
                .cursor
                .as_ref()
                .is_none_or(|c| (*millis, id.as_str()) < (c.status_millis, c.task_id.as_str()));
            if !after_cursor {
                continue;
            }
            if page.len() < query.page_size {
                page.push(Task::clone(task));
            } else if next.is_none()
                && let Some(last) = page.last()
            {
                next = Some(PageCursor {
                    status_millis: status_millis(last),
                    task_id: last.id.to_string(),
                });
            }
        }
        TaskPage {
            tasks: page,
            next,
            total_size,
        }
    }

    /// Saves `config` with its task (see [`super::PushStore::save_push_config`]); its bytes
    /// count against the store's budget as the task's own do.
    pub(crate) fn save_push_config(
        &mut self,
        config: &TaskPushNotificationConfig,
        max_per_task: usize,
    ) -> Result<PushConfigSaved, StoreError> {
        let Some(held) = self.tasks.get(&config.task_id) else {
            return Ok(PushConfigSaved::TaskMissing);
        };
        let found = held.push_position(&config.id);
        let replaced = match found {
            Ok(at) => footprint::push_config_bytes(&held.push[at]),
            Err(_) if held.push.len() >= max_per_task => return Ok(PushConfigSaved::AtCap),
            Err(_) => 0,
        };
        let size = (held.size + footprint::push_config_bytes(config)).saturating_sub(replaced);
        self.make_room_for_bytes(&config.task_id, size)?;
        let Some(held) = self.tasks.get_mut(&config.task_id) else {
            return Ok(PushConfigSaved::TaskMissing);
        };
        match found {
            Ok(at) => held.push[at] = config.clone(),
            Err(at) => held.push.insert(at, config.clone()),
        }
        self.task_bytes.fetch_sub(held.size, Ordering::Relaxed);
        held.size = size;
        self.task_bytes.fetch_add(size, Ordering::Relaxed);
        Ok(PushConfigSaved::Saved)
    }

    pub(crate) fn get_push_config(
        &self,
        task_id: &TaskId,
        id: &str,
    ) -> Option<TaskPushNotificationConfig> {
        let held = self.tasks.get(task_id)?;
        let at = held.push_position(id).ok()?;
        Some(held.push[at].clone())
    }

    pub(crate) fn list_push_configs(
        &self,
        task_id: &TaskId,
        after: Option<&str>,
        limit: usize,
    ) -> Vec<TaskPushNotificationConfig> {
        let Some(held) = self.tasks.get(task_id) else {
            return Vec::new();
        };
        let start = after.map_or(0, |after| {
            held.push.partition_point(|c| c.id.as_str() <= after)
        });
        held.push.iter().skip(start).take(limit).cloned().collect()
    }

    pub(crate) fn delete_push_config(&mut self, task_id: &TaskId, id: &str) -> bool {
        let Some(held) = self.tasks.get_mut(task_id) else {
            return false;
        };
        let Ok(at) = held.push_position(id) else {
            return false;
        };
        let gone = footprint::push_config_bytes(&held.push.remove(at));
        held.size = held.size.saturating_sub(gone);
        self.task_bytes.fetch_sub(gone, Ordering::Relaxed);
        // No notification goes to a deleted config, not even one already waiting.
        self.outbox.forget(task_id, Some(id));
        true
    }

    /// Claims due notifications (see [`MemoryOutbox::claim`]).
    pub(crate) fn claim_push_deliveries(
        &mut self,
        claimant: &str,
        now: i64,
        until: i64,
        limit: usize,
    ) -> Vec<PushDelivery> {
        let tasks = &self.tasks;
        self.outbox
            .claim(claimant, now, until, limit, |task_id, id| {
                let held = tasks.get(task_id)?;
                let at = held.push_position(id).ok()?;
                Some(held.push[at].clone())
            })
    }

    pub(crate) fn settle_push_delivery(
        &mut self,
        claimant: &str,
        delivery: &PushDelivery,
        settled: &DeliverySettled,
    ) {
        self.outbox.settle(claimant, delivery, settled);
    }

    pub(crate) fn dead_push_deliveries(&self, limit: usize) -> Vec<PushDelivery> {
        self.outbox.dead(limit)
    }

    pub(crate) fn claim(&mut self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        self.keys
            .claim(claim, &crate::store::key_index::KeyLimits::of(&self.config))
    }

    pub(crate) fn find_key(&self, claim: &KeyClaim) -> Option<ClaimOutcome> {
        self.keys.find(claim)
    }

    pub(crate) fn release(&mut self, claim: &KeyClaim) {
        self.keys.release(claim);
    }

    /// Whether nothing is left once what has expired is dropped: no task and no key.
    /// When this namespace may give way to a new tenant: at once when it holds only finished
    /// tasks (they would go to make room anyway), else when its last key expires (a key is
    /// never evicted); `None` while one of its tasks is unfinished or a notification waits.
    pub(crate) fn gives_way_at(&mut self, now: Instant) -> Option<Instant> {
        self.expire_terminal_tasks(now);
        self.keys.expire(now);
        let unfinished = self.tasks.len() > self.terminal.len();
        if unfinished || !self.outbox.is_idle() {
            return None;
        }
        Some(self.keys.last_expiry().unwrap_or(now))
    }

    pub(crate) fn is_empty_after_expiry(&mut self) -> bool {
        let now = Instant::now();
        self.expire_terminal_tasks(now);
        self.keys.expire(now);
        self.tasks.is_empty() && self.keys.len() == 0 && self.outbox.is_idle()
    }

    /// How many keys are held (expired ones included until the next claim drops them).
    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// How many tasks are held.
    pub(crate) fn task_count(&self) -> usize {
        self.tasks.len()
    }
}
