//! The store contract as checks a store passes or fails (feature `testing`): run them in the
//! tests of a store of your own, on a fresh, empty store, and a failure names the check and
//! what the store did. The bundled stores pass them in this crate's own tests.
//!
//! ```
//! use std::sync::Arc;
//!
//! use a2a_protocol_server::store::InMemoryTaskStore;
//! use a2a_protocol_server::store::conformance::Conformance;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let report = Conformance::new(Arc::new(InMemoryTaskStore::new())).run().await?;
//! assert!(report.passed.iter().any(|check| *check == "racing keyed writes have one winner"));
//! # Ok(())
//! # }
//! ```
//!
//! What is checked follows what the store says of itself: the key checks run when it
//! [supports idempotency](TaskStore::supports_idempotency), the revision and race checks when
//! its [writes are atomic](Capabilities::atomic_writes), the push checks when it
//! [offers push](Capabilities::push), and tenant isolation when
//! [`Conformance::with_tenant_aware`] says it keeps tenants apart.

use std::collections::HashSet;
use std::sync::Arc;

use a2a_protocol_types::idempotency::IdempotencyKey;
use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{
    ContextId, MessageId, StreamResponse, Task, TaskId, TaskState, TaskStatus, Timestamp,
};

use super::{
    Capabilities, ClaimOutcome, DeliverySettled, KeyClaim, KeyScope, Loaded, PushConfigSaved,
    StoreError, TaskQuery, TaskStore, TaskWrite, WriteOutcome,
};

/// The checks to run on one store.
#[derive(Clone)]
#[non_exhaustive]
pub struct Conformance {
    store: Arc<dyn TaskStore>,
    tenant_aware: bool,
    /// The key the key checks use.
    key: IdempotencyKey,
}

/// What passed, and what the store does not offer and so was not checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The checks that ran and passed.
    pub passed: Vec<&'static str>,
    /// The checks that did not run, because the store does not offer what they check.
    pub not_offered: Vec<&'static str>,
}

/// A check the store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// The store answered, but not as the contract says.
    #[error("{check}: {problem}")]
    Broken {
        /// The check.
        check: &'static str,
        /// What the store did, and what it should have.
        problem: String,
    },
    /// The store failed an operation the check needed.
    #[error("{check}: the store failed: {error}")]
    Store {
        /// The check.
        check: &'static str,
        /// The store's error.
        #[source]
        error: StoreError,
    },
}

/// One check's outcome.
type Checked = Result<(), Failure>;

impl Conformance {
    /// The checks for `store`, which must be new and empty (each check writes tasks of its
    /// own).
    pub fn new(store: Arc<dyn TaskStore>) -> Self {
        Self {
            store,
            tenant_aware: false,
            key: IdempotencyKey::generate(),
        }
    }

    /// Whether the store keeps each tenant's tasks apart, so that isolation is checked too.
    #[must_use]
    pub fn with_tenant_aware(mut self, tenant_aware: bool) -> Self {
        self.tenant_aware = tenant_aware;
        self
    }

    /// Runs every check the store's capabilities call for, in order, and stops at the first
    /// failure.
    ///
    /// # Errors
    ///
    /// The first check the store failed, naming it and what went wrong.
    pub async fn run(&self) -> Result<Report, Failure> {
        let mut report = Report::default();
        let offered: Capabilities<'_> = self.store.capabilities();
        let keys = self.store.supports_idempotency();
        let atomic = offered.atomic_writes;
        let push = offered.push.is_some();
        let checks: [(&'static str, bool); 8] = [
            ("a task written is read back", true),
            ("a task is created once", true),
            ("writes are conditional on the revision read", atomic),
            ("lists filter and page, newest status first", true),
            ("a keyed write is written, replayed or refused", keys),
            ("racing keyed writes have one winner", keys && atomic),
            ("tenants are kept apart", self.tenant_aware),
            ("push configs are kept with their task and notified", push),
        ];
        for (check, runs) in checks {
            if !runs {
                report.not_offered.push(check);
                continue;
            }
            match check {
                "a task written is read back" => self.read_back(check).await?,
                "a task is created once" => self.created_once(check).await?,
                "writes are conditional on the revision read" => self.conditional(check).await?,
                "lists filter and page, newest status first" => self.lists(check).await?,
                "a keyed write is written, replayed or refused" => self.keyed(check).await?,
                "racing keyed writes have one winner" => self.racing(check).await?,
                "tenants are kept apart" => self.tenants(check).await?,
                _ => self.push(check).await?,
            }
            report.passed.push(check);
        }
        Ok(report)
    }

    async fn read_back(&self, check: &'static str) -> Checked {
        let mut task = task("read-back", "c-read", TaskState::Working, 1_000);
        task.history
            .push(a2a_protocol_types::Message::user_text("hi"));
        task.generation = 1;
        let task = Arc::new(task);
        let written = self.store.write(&TaskWrite::create("", &task)).await;
        expect(
            check,
            "the write",
            written.map_err(store(check))?,
            WriteOutcome::Written,
        )?;
        let stored = self.loaded(check, "", &task.id).await?;
        expect(
            check,
            "the task read back",
            Some(stored),
            Some(Task::clone(&task)),
        )
    }

    async fn created_once(&self, check: &'static str) -> Checked {
        let task = Arc::new(task("created-once", "c", TaskState::Submitted, 1_000));
        let first = self.store.write(&TaskWrite::create("", &task)).await;
        expect(
            check,
            "the first create",
            first.map_err(store(check))?,
            WriteOutcome::Written,
        )?;
        let again = self.store.write(&TaskWrite::create("", &task)).await;
        expect(
            check,
            "a second create of the same id",
            again.map_err(store(check))?,
            WriteOutcome::Stale,
        )
    }

    async fn conditional(&self, check: &'static str) -> Checked {
        let mut task = task("conditional", "c", TaskState::Submitted, 1_000);
        let created = Arc::new(task.clone());
        self.write(check, TaskWrite::create("", &created)).await?;
        let Loaded::Changed(stored) = self.load(check, "", &task.id, None).await? else {
            return broken(check, "a task just written was not found");
        };
        task.status = TaskStatus::new(TaskState::Working);
        let working = Arc::new(task.clone());
        let stale = self
            .store
            .write(&TaskWrite::update("", &working, stored.revision + 1))
            .await;
        expect(
            check,
            "a write over a revision not read",
            stale.map_err(store(check))?,
            WriteOutcome::Stale,
        )?;
        self.write(check, TaskWrite::update("", &working, stored.revision))
            .await?;
        let again = self
            .store
            .write(&TaskWrite::update("", &working, stored.revision))
            .await;
        expect(
            check,
            "a second write over the same revision",
            again.map_err(store(check))?,
            WriteOutcome::Stale,
        )?;
        match self
            .load(check, "", &task.id, Some(stored.revision))
            .await?
        {
            Loaded::Changed(now) if now.revision > stored.revision => Ok(()),
            other => broken(
                check,
                format!("a load holding the old revision found {other:?}, not the task changed"),
            ),
        }
    }

    async fn lists(&self, check: &'static str) -> Checked {
        let tenant = "lists";
        for i in 0..5 {
            let context = if i % 2 == 0 { "even" } else { "odd" };
            let state = if i == 3 {
                TaskState::InputRequired
            } else {
                TaskState::Completed
            };
            let created = Arc::new(task(&format!("list-{i}"), context, state, 2_000 + i));
            self.write(check, TaskWrite::create(tenant, &created))
                .await?;
        }
        // A store that keeps tenants apart shows only this tenant's; one that does not shows
        // the tasks of the other checks too, so only these are counted.
        let ours = |tasks: &[Task]| -> Vec<String> {
            tasks
                .iter()
                .map(|t| t.id.to_string())
                .filter(|id| id.starts_with("list-"))
                .collect()
        };
        let all = self
            .list(
                check,
                tenant,
                TaskQuery {
                    page_size: 100,
                    ..TaskQuery::default()
                },
            )
            .await?;
        expect(
            check,
            "every task, newest status first",
            ours(&all.tasks),
            ids(&["list-4", "list-3", "list-2", "list-1", "list-0"]),
        )?;
        let even = self
            .list(
                check,
                tenant,
                TaskQuery {
                    context_id: Some(ContextId::new("even")),
                    page_size: 100,
                    ..TaskQuery::default()
                },
            )
            .await?;
        expect(
            check,
            "the tasks of one context",
            ours(&even.tasks),
            ids(&["list-4", "list-2", "list-0"]),
        )?;
        let waiting = self
            .list(
                check,
                tenant,
                TaskQuery {
                    status: Some(TaskState::InputRequired),
                    page_size: 100,
                    ..TaskQuery::default()
                },
            )
            .await?;
        expect(
            check,
            "the tasks in one state",
            ours(&waiting.tasks),
            ids(&["list-3"]),
        )?;
        let recent = self
            .list(
                check,
                tenant,
                TaskQuery {
                    status_timestamp_after: Timestamp::from_unix_millis(2_002),
                    page_size: 100,
                    ..TaskQuery::default()
                },
            )
            .await?;
        expect(
            check,
            "the tasks changed after a time",
            ours(&recent.tasks),
            ids(&["list-4", "list-3"]),
        )?;
        let mut seen = Vec::new();
        let mut cursor = None;
        for _ in 0..100 {
            let page = self
                .list(
                    check,
                    tenant,
                    TaskQuery {
                        page_size: 2,
                        cursor: cursor.take(),
                        ..TaskQuery::default()
                    },
                )
                .await?;
            if page.tasks.len() > 2 {
                return broken(check, format!("a page of 2 held {}", page.tasks.len()));
            }
            seen.extend(ours(&page.tasks));
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        expect(check, "the pages, in order", seen, ours(&all.tasks))
    }

    async fn keyed(&self, check: &'static str) -> Checked {
        let claim = |message: &str, task: &str, scope: KeyScope| KeyClaim {
            scope,
            key: self.key.clone(),
            message_id: MessageId::new(message),
            task_id: TaskId::new(task),
            charged_to: None,
        };
        let first = claim("m-1", "keyed-1", KeyScope::default());
        let created = Arc::new(task("keyed-1", "c", TaskState::Submitted, 1_000));
        self.write(
            check,
            TaskWrite::create("", &created).with_claim(Some(&first)),
        )
        .await?;
        let retry = claim("m-1", "keyed-2", KeyScope::default());
        let again = Arc::new(task("keyed-2", "c", TaskState::Submitted, 1_000));
        let outcome = self
            .store
            .write(&TaskWrite::create("", &again).with_claim(Some(&retry)))
            .await;
        expect(
            check,
            "a retry's write",
            outcome.map_err(store(check))?,
            WriteOutcome::KeyHeld(ClaimOutcome::Replay(TaskId::new("keyed-1"))),
        )?;
        let other = claim("m-2", "keyed-3", KeyScope::default());
        let third = Arc::new(task("keyed-3", "c", TaskState::Submitted, 1_000));
        let outcome = self
            .store
            .write(&TaskWrite::create("", &third).with_claim(Some(&other)))
            .await;
        expect(
            check,
            "another message's write with the key",
            outcome.map_err(store(check))?,
            WriteOutcome::KeyHeld(ClaimOutcome::Conflict),
        )?;
        if self
            .loaded_opt(check, "", &TaskId::new("keyed-2"))
            .await?
            .is_some()
        {
            return broken(check, "a write refused for its key stored its task");
        }
        let found = self
            .store
            .find_idempotency_key(&retry)
            .await
            .map_err(store(check))?;
        expect(
            check,
            "the key found",
            found,
            Some(ClaimOutcome::Replay(TaskId::new("keyed-1"))),
        )?;
        for (id, scope) in [
            (
                "keyed-tenant",
                KeyScope {
                    tenant: "other".into(),
                    caller: None,
                },
            ),
            (
                "keyed-caller",
                KeyScope {
                    tenant: String::new(),
                    caller: Some("alice".into()),
                },
            ),
        ] {
            let elsewhere = claim("m-9", id, scope.clone());
            let created = Arc::new(task(id, "c", TaskState::Submitted, 1_000));
            let outcome = self
                .store
                .write(&TaskWrite::create(&scope.tenant, &created).with_claim(Some(&elsewhere)))
                .await;
            expect(
                check,
                "the same key in another scope",
                outcome.map_err(store(check))?,
                WriteOutcome::Written,
            )?;
        }
        Ok(())
    }

    async fn racing(&self, check: &'static str) -> Checked {
        let writes = (0..16).map(|i| {
            let store = Arc::clone(&self.store);
            let key = self.key.clone();
            async move {
                let claim = KeyClaim {
                    scope: KeyScope {
                        tenant: "race".into(),
                        caller: None,
                    },
                    key,
                    message_id: MessageId::new("m-race"),
                    task_id: TaskId::new(format!("race-{i}")),
                    charged_to: None,
                };
                let created =
                    Arc::new(task(&format!("race-{i}"), "c", TaskState::Submitted, 1_000));
                store
                    .write(&TaskWrite::create("race", &created).with_claim(Some(&claim)))
                    .await
            }
        });
        let handles: Vec<_> = writes.map(tokio::spawn).collect();
        let mut outcomes = Vec::new();
        for handle in handles {
            match handle.await {
                Ok(outcome) => outcomes.push(outcome.map_err(store(check))?),
                Err(_) => return broken(check, "a racing write panicked"),
            }
        }
        let written = outcomes
            .iter()
            .filter(|o| **o == WriteOutcome::Written)
            .count();
        let winners: HashSet<_> = outcomes
            .iter()
            .filter_map(|o| match o {
                WriteOutcome::KeyHeld(ClaimOutcome::Replay(id)) => Some(id.clone()),
                _ => None,
            })
            .collect();
        if written != 1 || winners.len() != 1 || outcomes.len() - written != 15 {
            return broken(
                check,
                format!(
                    "16 racing writes with one key: {written} written, the others saw {winners:?}; one write wins and every other sees it"
                ),
            );
        }
        Ok(())
    }

    async fn tenants(&self, check: &'static str) -> Checked {
        let created = Arc::new(task("tenant-only", "c", TaskState::Working, 1_000));
        self.write(check, TaskWrite::create("tenant-a", &created))
            .await?;
        if self
            .loaded_opt(check, "tenant-b", &created.id)
            .await?
            .is_some()
        {
            return broken(check, "tenant-b read tenant-a's task");
        }
        let listed = self
            .list(
                check,
                "tenant-b",
                TaskQuery {
                    page_size: 100,
                    ..TaskQuery::default()
                },
            )
            .await?;
        if listed.tasks.iter().any(|t| t.id == created.id) {
            return broken(check, "tenant-b listed tenant-a's task");
        }
        let same_id = Arc::new(task("tenant-only", "c", TaskState::Submitted, 1_000));
        self.write(check, TaskWrite::create("tenant-b", &same_id))
            .await
    }

    async fn push(&self, check: &'static str) -> Checked {
        let Some(push) = self.store.capabilities().push else {
            return Ok(());
        };
        let config = |id: &str| TaskPushNotificationConfig {
            tenant: String::new(),
            id: id.into(),
            task_id: TaskId::new("pushed"),
            url: format!("https://client.example/{id}"),
            token: None,
            authentication: None,
        };
        let missing = push
            .save_push_config("", &config("a"), 2)
            .await
            .map_err(store(check))?;
        expect(
            check,
            "a config of no task",
            missing,
            PushConfigSaved::TaskMissing,
        )?;
        let mut task = task("pushed", "c", TaskState::Submitted, 1_000);
        task.generation = 1;
        self.write(check, TaskWrite::create("", &Arc::new(task.clone())))
            .await?;
        for id in ["a", "b"] {
            let saved = push
                .save_push_config("", &config(id), 2)
                .await
                .map_err(store(check))?;
            expect(check, "a config saved", saved, PushConfigSaved::Saved)?;
        }
        let third = push
            .save_push_config("", &config("c"), 2)
            .await
            .map_err(store(check))?;
        expect(
            check,
            "a config past the cap",
            third,
            PushConfigSaved::AtCap,
        )?;
        let got = push
            .get_push_config("", &task.id, "a")
            .await
            .map_err(store(check))?;
        expect(check, "a config read back", got, Some(config("a")))?;
        let page = push
            .list_push_configs("", &task.id, Some("a"), 10)
            .await
            .map_err(store(check))?;
        expect(
            check,
            "the configs after the first",
            page,
            vec![config("b")],
        )?;
        // An event is written with a notification per config, delivered once per claim.
        task.status = TaskStatus::new(TaskState::Completed);
        task.generation = 2;
        let event = StreamResponse::Task(task.clone());
        let Loaded::Changed(stored) = self.load(check, "", &task.id, None).await? else {
            return broken(check, "a task just written was not found");
        };
        self.write(
            check,
            TaskWrite::update("", &Arc::new(task), stored.revision).with_event(&event),
        )
        .await?;
        let lease = std::time::Duration::from_secs(30);
        let claimed = push
            .claim_push_deliveries("p-1", lease, 10)
            .await
            .map_err(store(check))?;
        let mut ids: Vec<String> = claimed.iter().map(|d| d.delivery_id()).collect();
        ids.sort();
        expect(
            check,
            "the notifications of the event",
            ids,
            vec!["pushed:a:2".to_owned(), "pushed:b:2".to_owned()],
        )?;
        let again = push
            .claim_push_deliveries("p-2", lease, 10)
            .await
            .map_err(store(check))?;
        expect(check, "notifications claimed by another", again.len(), 0)?;
        for delivery in &claimed {
            push.settle_push_delivery("p-1", delivery, &DeliverySettled::Delivered)
                .await
                .map_err(store(check))?;
        }
        if !push
            .delete_push_config("", &TaskId::new("pushed"), "a")
            .await
            .map_err(store(check))?
        {
            return broken(check, "a config deleted was not there");
        }
        let left = push
            .get_push_config("", &TaskId::new("pushed"), "a")
            .await
            .map_err(store(check))?;
        expect(check, "a config deleted", left, None)
    }

    async fn write(&self, check: &'static str, write: TaskWrite<'_>) -> Checked {
        let outcome = self.store.write(&write).await.map_err(store(check))?;
        expect(check, "a write", outcome, WriteOutcome::Written)
    }

    async fn load(
        &self,
        check: &'static str,
        tenant: &str,
        id: &TaskId,
        known: Option<u64>,
    ) -> Result<Loaded, Failure> {
        self.store
            .load(tenant, id, known)
            .await
            .map_err(store(check))
    }

    async fn loaded_opt(
        &self,
        check: &'static str,
        tenant: &str,
        id: &TaskId,
    ) -> Result<Option<Task>, Failure> {
        Ok(match self.load(check, tenant, id, None).await? {
            Loaded::Missing => None,
            Loaded::Changed(stored) | Loaded::Unchanged(stored) => Some(stored.task),
        })
    }

    async fn loaded(
        &self,
        check: &'static str,
        tenant: &str,
        id: &TaskId,
    ) -> Result<Task, Failure> {
        match self.loaded_opt(check, tenant, id).await? {
            Some(task) => Ok(task),
            None => Err(Failure::Broken {
                check,
                problem: format!("task {id} was written but is not found"),
            }),
        }
    }

    async fn list(
        &self,
        check: &'static str,
        tenant: &str,
        query: TaskQuery,
    ) -> Result<super::TaskPage, Failure> {
        self.store.list(tenant, &query).await.map_err(store(check))
    }
}

fn task(id: &str, context: &str, state: TaskState, millis: i64) -> Task {
    let mut status = TaskStatus::new(state);
    status.timestamp = Timestamp::from_unix_millis(millis);
    Task::new(id, context, status)
}

fn ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| (*id).to_owned()).collect()
}

fn store(check: &'static str) -> impl Fn(StoreError) -> Failure {
    move |error| Failure::Store { check, error }
}

fn broken(check: &'static str, problem: impl Into<String>) -> Checked {
    Err(Failure::Broken {
        check,
        problem: problem.into(),
    })
}

fn expect<T: PartialEq + std::fmt::Debug>(
    check: &'static str,
    what: &str,
    got: T,
    want: T,
) -> Checked {
    if got == want {
        Ok(())
    } else {
        broken(check, format!("{what}: got {got:?}, expected {want:?}"))
    }
}
