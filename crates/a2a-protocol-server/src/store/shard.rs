//! One namespace of the in-memory stores: tasks, their list order, and the key index.
//!
//! Both expiries cost time proportional to what expires: keys and terminal tasks sit in
//! insertion-ordered maps, and with a fixed TTL insertion order is expiry order, so a sweep
//! pops from the front until it meets an entry that is still live.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use a2a_protocol_types::{Task, TaskId};
use hashlink::LinkedHashMap;

use super::{ClaimOutcome, KeyClaim, PageCursor, StoreError, TaskPage, TaskQuery, TaskStoreConfig};

/// A held key: the task it created and the message that created it, in one allocation.
struct KeyEntry {
    /// `task_id` followed by `message_id`; `split` is where one ends and the other begins.
    ids: Box<str>,
    split: u32,
    expires_at: Instant,
}

impl KeyEntry {
    fn new(task_id: &str, message_id: &str, expires_at: Instant) -> Option<Self> {
        let split = u32::try_from(task_id.len()).ok()?;
        let mut ids = String::with_capacity(task_id.len() + message_id.len());
        ids.push_str(task_id);
        ids.push_str(message_id);
        Some(Self {
            ids: ids.into_boxed_str(),
            split,
            expires_at,
        })
    }

    fn task_id(&self) -> &str {
        self.ids.get(..self.split as usize).unwrap_or("")
    }

    fn message_id(&self) -> &str {
        self.ids.get(self.split as usize..).unwrap_or("")
    }
}

/// The index's key for a claim: tenant, caller and key, each length-prefixed where another part
/// follows it, so no two scopes can run together into one key. Built by hand: it is made on
/// every keyed send.
fn index_key(claim: &KeyClaim) -> Box<str> {
    let tenant = &claim.scope.tenant;
    let caller = claim.scope.caller.as_deref();
    let mut key =
        String::with_capacity(tenant.len() + caller.map_or(0, str::len) + claim.key.len() + 24);
    push_len(&mut key, tenant.len());
    key.push(':');
    key.push_str(tenant);
    match caller {
        Some(caller) => {
            push_len(&mut key, caller.len());
            key.push(':');
            key.push_str(caller);
        }
        None => key.push('-'),
    }
    key.push_str(&claim.key);
    key.into_boxed_str()
}

fn push_len(out: &mut String, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

fn status_millis(task: &Task) -> i64 {
    task.status.timestamp.map_or(0, |t| t.unix_millis())
}

pub(crate) struct Shard {
    config: TaskStoreConfig,
    /// Shared with the live state of tasks being worked on, so a save copies nothing.
    tasks: HashMap<TaskId, Arc<Task>>,
    /// (status time, id) of every task, for newest-first listing.
    order: BTreeSet<(i64, TaskId)>,
    /// Terminal tasks, oldest first, with when they were seen terminal.
    terminal: LinkedHashMap<TaskId, Instant>,
    keys: LinkedHashMap<Box<str>, KeyEntry>,
}

impl Shard {
    pub(crate) fn new(config: TaskStoreConfig) -> Self {
        Self {
            config,
            tasks: HashMap::new(),
            order: BTreeSet::new(),
            terminal: LinkedHashMap::new(),
            keys: LinkedHashMap::new(),
        }
    }

    pub(crate) fn get(&self, id: &TaskId) -> Option<Task> {
        self.tasks.get(id).map(|task| Task::clone(task))
    }

    pub(crate) fn save(&mut self, task: Arc<Task>) -> Result<(), StoreError> {
        let now = Instant::now();
        self.expire_terminal_tasks(now);
        let millis = status_millis(&task);
        let previous = self.tasks.get(&task.id).map(|t| status_millis(t));
        match previous {
            // The list order changes only when the status time does.
            Some(before) if before == millis => {}
            Some(before) => {
                self.order.remove(&(before, task.id.clone()));
                self.order.insert((millis, task.id.clone()));
            }
            None => {
                if self.tasks.len() >= self.config.max_tasks && !self.evict_oldest_terminal() {
                    return Err(StoreError::CapacityExceeded("tasks"));
                }
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
            Some(slot) => *slot = task,
            None => {
                self.tasks.insert(task.id.clone(), task);
            }
        }
        Ok(())
    }

    fn remove_task(&mut self, id: &TaskId) {
        if let Some(task) = self.tasks.remove(id) {
            self.order.remove(&(status_millis(&task), id.clone()));
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
        let matches = |task: &Task| {
            query
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
            let Some(task) = self.tasks.get(id) else {
                continue;
            };
            if !matches(task) {
                continue;
            }
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
            } else if next.is_none() {
                if let Some(last) = page.last() {
                    next = Some(PageCursor {
                        status_millis: status_millis(last),
                        task_id: last.id.to_string(),
                    });
                }
            }
        }
        TaskPage {
            tasks: page,
            next,
            total_size,
        }
    }

    pub(crate) fn claim(&mut self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        let now = Instant::now();
        while self.keys.front().is_some_and(|(_, e)| e.expires_at <= now) {
            self.keys.pop_front();
        }
        let index = index_key(claim);
        if let Some(entry) = self.keys.get(&index) {
            return Ok(if entry.message_id() == claim.message_id.as_str() {
                ClaimOutcome::Replay(TaskId::new(entry.task_id()))
            } else {
                ClaimOutcome::Conflict
            });
        }
        if self.keys.len() >= self.config.max_idempotency_keys {
            return Err(StoreError::CapacityExceeded("idempotency keys"));
        }
        let entry = KeyEntry::new(
            claim.task_id.as_str(),
            claim.message_id.as_str(),
            now + self.config.idempotency_key_ttl,
        )
        .ok_or(StoreError::CapacityExceeded("task id length"))?;
        self.keys.insert(index, entry);
        Ok(ClaimOutcome::Claimed)
    }

    pub(crate) fn release(&mut self, claim: &KeyClaim) {
        let index = index_key(claim);
        if self
            .keys
            .get(&index)
            .is_some_and(|e| e.task_id() == claim.task_id.as_str())
        {
            self.keys.remove(&index);
        }
    }

    /// How many keys are held (expired ones included until the next claim sweeps them).
    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// How many tasks are held.
    pub(crate) fn task_count(&self) -> usize {
        self.tasks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::KeyScope;

    fn claim(tenant: &str, caller: Option<&str>) -> KeyClaim {
        KeyClaim {
            scope: KeyScope {
                tenant: tenant.into(),
                caller: caller.map(Into::into),
            },
            key: "k".repeat(16),
            message_id: "m".into(),
            task_id: "t".into(),
        }
    }

    #[test]
    fn index_keys_prefix_each_scope_part_with_its_length() {
        let key = "k".repeat(16);
        assert_eq!(&*index_key(&claim("", None)), format!("0:-{key}"));
        assert_eq!(&*index_key(&claim("acme", None)), format!("4:acme-{key}"));
        assert_eq!(
            &*index_key(&claim("acme", Some("alice"))),
            format!("4:acme5:alice{key}")
        );
        let long = "t".repeat(1234);
        assert!(index_key(&claim(&long, None)).starts_with("1234:"));
        // Parts cannot run together: moving a character between tenant and caller changes the key.
        assert_ne!(
            index_key(&claim("ab", Some("c"))),
            index_key(&claim("a", Some("bc")))
        );
    }
}
