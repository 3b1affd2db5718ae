//! Following a task: its snapshot, then its events until the end the follower wants (a send's
//! stream ends when the task settles, a subscription when it is terminal), across its turns and
//! wherever they run.
//!
//! A turn running in this process is followed from its live broadcast. Otherwise the store is
//! read: with a store several processes share, the events the running process recorded, in
//! order and none merged, woken by the store's notices where it pushes them; with a store one
//! process uses alone, the changes between two reads of the task. A turn that starts in this
//! process wakes every follower of its task at once.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_types::{StreamResponse, Task};
use futures::{StreamExt, stream};
use tokio::sync::broadcast;

use super::{EventStream, Inner, RequestHandler};
use crate::runtime::{at_settled, at_terminal, changes, follow_live_until};
use crate::store::{Notice, TaskRef};
use crate::store::{Offers, TaskStoreExt};

/// Which event ends a follower's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndsAt {
    /// The task settled: it finished or waits for input (a send's stream, §11.7).
    Settled,
    /// The task finished (a subscription, §3.1.6).
    Terminal,
}

impl EndsAt {
    fn reached(self, event: &StreamResponse) -> bool {
        match self {
            EndsAt::Settled => at_settled(event),
            EndsAt::Terminal => at_terminal(event),
        }
    }

    fn predicate(self) -> fn(&StreamResponse) -> bool {
        match self {
            EndsAt::Settled => at_settled,
            EndsAt::Terminal => at_terminal,
        }
    }
}

/// How long a follower of a store without notices waits between reads at first, and at most
/// while nothing changes.
const FIRST_POLL: Duration = Duration::from_millis(50);
const MAX_POLL: Duration = Duration::from_secs(1);

/// How long a follower's registration with the store lasts, and how often it is renewed.
const FOLLOW_TTL: Duration = Duration::from_secs(30);
const FOLLOW_RENEWAL: Duration = Duration::from_secs(10);

impl RequestHandler {
    /// The task as it stands (its history cut to `history`), then its events until `ends_at`.
    pub(crate) async fn follow(
        &self,
        tenant: &str,
        stored: Task,
        history: Option<usize>,
        ends_at: EndsAt,
    ) -> EventStream {
        let mut following = Following {
            inner: Arc::clone(&self.inner),
            tenant: tenant.to_owned(),
            last: stored,
            pending: VecDeque::new(),
            phase: Phase::Idle(FIRST_POLL),
            ends_at,
            notices: None,
            registered: None,
        };
        if let Some(live) = self.inner.registry.get(tenant, &following.last.id) {
            let (snapshot, events) = live.subscribe().await;
            following.last = snapshot;
            following.phase = Phase::Live(follow_live_until(live, events, ends_at.predicate()));
        } else if let Some(coordination) = self.inner.store.coordination() {
            following.notices = coordination.notices();
        }
        let mut first = following.last.clone();
        first.truncate_history(history);
        let first = StreamResponse::Task(first);
        if ends_at.reached(&first) {
            following.phase = Phase::Done;
        }
        following.pending.push_back(first);
        stream::unfold(following, |mut following| async move {
            let event = following.next().await?;
            Some((event, following))
        })
        .boxed()
    }
}

enum Phase {
    /// Following a turn running in this process.
    Live(EventStream),
    /// Reading the store: between turns, or while another process runs the turn. The
    /// duration is the wait before the next read without notices.
    Idle(Duration),
    Done,
}

struct Following {
    inner: Arc<Inner>,
    tenant: String,
    /// The task as the follower last saw it.
    last: Task,
    pending: VecDeque<StreamResponse>,
    phase: Phase,
    ends_at: EndsAt,
    /// The store's notices, when it pushes them.
    notices: Option<broadcast::Receiver<Notice>>,
    /// When this follower last told the store it follows the task (so writers notify it).
    registered: Option<tokio::time::Instant>,
}

impl Following {
    async fn next(&mut self) -> Option<StreamResponse> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Live(events) => {
                    let next = tokio::select! {
                        next = events.next() => next,
                        () = self.inner.services.stopped.cancelled() => {
                            self.phase = Phase::Done;
                            continue;
                        }
                    };
                    match next {
                        Some(event) => {
                            self.observe(&event);
                            if self.ends_at.reached(&event) {
                                self.phase = Phase::Done;
                            }
                            return Some(event);
                        }
                        None => self.turn_ended().await,
                    }
                }
                Phase::Idle(delay) => {
                    let delay = *delay;
                    self.read_store(delay).await;
                }
            }
        }
    }

    /// Keeps `last` current with what was forwarded.
    fn observe(&mut self, event: &StreamResponse) {
        match event {
            StreamResponse::Task(task) => self.last = task.clone(),
            StreamResponse::StatusUpdate(update) => {
                self.last.status = update.status.clone();
                self.last.generation = self.last.generation.max(update.generation);
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.last.generation = self.last.generation.max(update.generation);
            }
            StreamResponse::Message(_) => {}
        }
    }

    /// The live turn ended without reaching the follower's end: the task waits for input, its
    /// turn passed to another process, or its last event could not be saved. What the store
    /// holds says which.
    async fn turn_ended(&mut self) {
        self.phase = Phase::Idle(FIRST_POLL);
        if self.notices.is_none() {
            self.notices = self.inner.store.coordination().and_then(|c| c.notices());
        }
        match self.inner.store.get(&self.tenant, &self.last.id).await {
            Ok(Some(current)) => self.catch_up(current),
            Ok(None) => self.phase = Phase::Done,
            Err(error) => {
                tracing::warn!(task_id = %self.last.id, %error, "reading a task for its follower failed");
            }
        }
    }

    /// Reads what changed since the follower last looked, after waiting for a reason to: a
    /// turn of the task starting in this process, a notice about it, or `delay` passing.
    async fn read_store(&mut self, delay: Duration) {
        let inner = Arc::clone(&self.inner);
        let became_live = inner.registry.next_live();
        tokio::pin!(became_live);
        became_live.as_mut().enable();
        if let Some(live) = inner.registry.get(&self.tenant, &self.last.id) {
            let (snapshot, events) = live.subscribe().await;
            self.catch_up(snapshot);
            if !matches!(self.phase, Phase::Done) {
                self.phase = Phase::Live(follow_live_until(live, events, self.ends_at.predicate()));
            }
            return;
        }
        self.register().await;
        let changed = self.read_events().await;
        if changed || matches!(self.phase, Phase::Done) {
            self.phase = match self.phase {
                Phase::Done => Phase::Done,
                _ => Phase::Idle(FIRST_POLL),
            };
            return;
        }
        let poll = match (&self.notices, self.inner.store.coordination()) {
            (Some(_), Some(coordination)) => coordination.poll_interval(),
            (None, Some(coordination)) => delay.max(coordination.poll_interval()),
            _ => delay,
        };
        let task = TaskRef::new(&self.tenant, &self.last.id);
        let notices = &mut self.notices;
        let noticed = async {
            match notices {
                Some(receiver) => loop {
                    match receiver.recv().await {
                        Ok(Notice::Changed { task: about, .. }) if about.id == task.id => return,
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Lagged(_)) => return,
                        Err(broadcast::error::RecvError::Closed) => {
                            std::future::pending::<()>().await;
                        }
                    }
                },
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = became_live => return,
            () = noticed => {}
            () = tokio::time::sleep(poll) => {}
            () = inner.services.stopped.cancelled() => {
                self.phase = Phase::Done;
                return;
            }
        }
        self.phase = Phase::Idle((delay * 2).min(MAX_POLL));
    }

    /// Tells the store this process follows the task, where writers notify followers, before
    /// reading it: an event written after the registration is notified, one written before is
    /// read.
    async fn register(&mut self) {
        let (Some(_), Some(coordination)) = (&self.notices, self.inner.store.coordination()) else {
            return;
        };
        if self
            .registered
            .is_some_and(|at| at.elapsed() < FOLLOW_RENEWAL)
        {
            return;
        }
        let task = TaskRef::new(&self.tenant, &self.last.id);
        match coordination
            .follow(&task, &self.inner.services.owner, FOLLOW_TTL)
            .await
        {
            Ok(()) => self.registered = Some(tokio::time::Instant::now()),
            Err(error) => {
                tracing::warn!(task_id = %task.id, %error, "could not register a follower")
            }
        }
    }

    /// Reads the store once; true when it showed a change.
    async fn read_events(&mut self) -> bool {
        if let Some(coordination) = self.inner.store.coordination() {
            let task = TaskRef::new(&self.tenant, &self.last.id);
            match coordination.events_after(&task, self.last.generation).await {
                Ok(events) if events.is_empty() => return false,
                Ok(events) if follows_on(&events, self.last.generation) => {
                    for event in events {
                        self.observe(&event);
                        let end = self.ends_at.reached(&event);
                        self.pending.push_back(event);
                        if end {
                            self.phase = Phase::Done;
                            break;
                        }
                    }
                    return true;
                }
                // A gap: the follower fell behind what the store keeps. Start again from the
                // task as it is.
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(task_id = %task.id, %error, "reading a task's events failed");
                    return false;
                }
            }
            return match self.inner.store.get(&self.tenant, &self.last.id).await {
                Ok(Some(current)) => {
                    let event = StreamResponse::Task(current.clone());
                    self.last = current;
                    if self.ends_at.reached(&event) {
                        self.phase = Phase::Done;
                    }
                    self.pending.push_back(event);
                    true
                }
                Ok(None) => {
                    self.phase = Phase::Done;
                    true
                }
                Err(_) => false,
            };
        }
        match self.inner.store.get(&self.tenant, &self.last.id).await {
            Ok(Some(current)) => {
                let changed = current != self.last;
                self.catch_up(current);
                changed
            }
            Ok(None) => {
                self.phase = Phase::Done;
                true
            }
            Err(error) => {
                tracing::warn!(task_id = %self.last.id, %error, "reading a task for its follower failed");
                false
            }
        }
    }

    /// Queues the events that bring the follower from `last` to `current`, and ends the
    /// stream once it reaches the follower's end.
    fn catch_up(&mut self, current: Task) {
        for event in changes(&self.last, &current) {
            let end = self.ends_at.reached(&event);
            self.pending.push_back(event);
            if end {
                self.phase = Phase::Done;
                break;
            }
        }
        self.last = current;
    }
}

/// Whether `events` continue right after `generation`, with no event missing.
fn follows_on(events: &[StreamResponse], generation: u64) -> bool {
    let first = match events.first() {
        Some(StreamResponse::StatusUpdate(update)) => update.generation,
        Some(StreamResponse::ArtifactUpdate(update)) => update.generation,
        Some(StreamResponse::Task(task)) => task.generation,
        Some(StreamResponse::Message(_)) | None => return true,
    };
    first == generation + 1
}
