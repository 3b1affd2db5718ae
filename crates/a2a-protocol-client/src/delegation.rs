//! Delegating work to another agent: start a child task, follow it, cancel it.
//!
//! [`Delegation::start`] gives the child's message a fresh idempotency key when the client
//! knows its agent honours keys and the message has none; a key the caller set is kept, and
//! [`Delegation::idempotency_key`] returns whichever the message carried. With a retry policy
//! on the client, a start that fails ambiguously is retried and reaches the child the first
//! attempt created. **A parent that resends by itself after `start` fails must set the key
//! before calling `start`** (`idempotency::set_key`): a failed start returns no handle to read
//! the key from, and a resend without it starts a second child.
//!
//! [`Delegation::start_leased`] attaches a lease: the child's agent cancels the child when the
//! lease lapses unrenewed, and [`Delegation::wait`] renews it every third of its TTL, so a
//! parent that goes silent does not leave work running. [`Delegation::start_budgeted`] attaches
//! a budget grant ([`ParentBudget::carve`] makes one out of the parent's own budget).
//!
//! Dropping an unsettled delegation cancels the child; [`Delegation::detach`] lets it run on.

use std::collections::BTreeMap;
use std::time::Duration;

use a2a_protocol_types::budget::{BudgetGrant, BudgetReport, report_of, set_budget};
use a2a_protocol_types::idempotency::{generate_key, key_of, set_key};
use a2a_protocol_types::lease::{LEASE_EXTENSION_URI, Lease, lease_of, set_lease};
use a2a_protocol_types::{
    CancelTaskRequest, GetTaskRequest, Message, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, Task, TaskId, TaskState,
};
use tokio::time::Instant;

use crate::client::A2aClient;
use crate::error::ClientError;

/// How a child task ended, or where it stopped to wait.
///
/// ```
/// use a2a_protocol_client::delegation::DelegationOutcome;
/// use a2a_protocol_types::{Task, TaskState, TaskStatus};
///
/// let outcome = DelegationOutcome::Completed(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Completed)));
/// match &outcome {
///     DelegationOutcome::Completed(task) => assert_eq!(task.id.as_str(), "t-1"),
///     DelegationOutcome::BudgetExhausted(task) => println!("{} ran out of budget", task.id),
///     other => println!("the child ended otherwise: {other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DelegationOutcome {
    /// The child completed.
    Completed(Task),
    /// The child failed.
    Failed(Task),
    /// The child failed because its budget ran out.
    BudgetExhausted(Task),
    /// The child was canceled.
    Canceled(Task),
    /// The child's agent rejected the work.
    Rejected(Task),
    /// The child waits for more input.
    InputRequired(Task),
    /// The child waits for authentication.
    AuthRequired(Task),
    /// The child's agent answered with a direct message; there is no task.
    Replied(Message),
}

impl DelegationOutcome {
    fn of(task: Task) -> Option<Self> {
        Some(match task.status.state {
            TaskState::Completed => Self::Completed(task),
            TaskState::Failed
                if report_of(task.metadata.as_ref()).is_some_and(|r| r.exhausted.is_some()) =>
            {
                Self::BudgetExhausted(task)
            }
            TaskState::Failed => Self::Failed(task),
            TaskState::Canceled => Self::Canceled(task),
            TaskState::Rejected => Self::Rejected(task),
            TaskState::InputRequired => Self::InputRequired(task),
            TaskState::AuthRequired => Self::AuthRequired(task),
            _ => return None,
        })
    }

    /// The child task, unless the agent replied with a message.
    ///
    /// ```
    /// use a2a_protocol_client::delegation::DelegationOutcome;
    /// use a2a_protocol_types::{Message, Task, TaskState, TaskStatus};
    ///
    /// let failed = DelegationOutcome::Failed(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Failed)));
    /// assert_eq!(failed.task().map(|t| t.id.as_str()), Some("t-1"));
    /// assert!(DelegationOutcome::Replied(Message::agent_text("hi")).task().is_none());
    /// ```
    pub fn task(&self) -> Option<&Task> {
        match self {
            Self::Completed(t)
            | Self::Failed(t)
            | Self::BudgetExhausted(t)
            | Self::Canceled(t)
            | Self::Rejected(t)
            | Self::InputRequired(t)
            | Self::AuthRequired(t) => Some(t),
            Self::Replied(_) => None,
        }
    }
}

/// A child task started on another agent.
///
/// ```no_run
/// use a2a_protocol_client::delegation::{Delegation, DelegationOutcome};
/// use a2a_protocol_client::{ClientBuilder, RetryPolicy};
/// use a2a_protocol_types::Message;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
/// let translator = ClientBuilder::discover("http://translator.internal:8080")
///     .await?
///     .with_retry_policy(RetryPolicy::default())
///     .build()?;
/// let mut child = Delegation::start(&translator, Message::user_text("translate: bonjour")).await?;
/// if let DelegationOutcome::Completed(task) = child.wait().await? {
///     println!("{:?}", task.artifacts);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Delegation {
    client: A2aClient,
    renewing: Option<A2aClient>,
    task_id: Option<TaskId>,
    key: Option<String>,
    lease: Option<Lease>,
    last: Option<Task>,
    outcome: Option<DelegationOutcome>,
    detached: bool,
}

/// A child task about to be started: its message, and optionally a lease and a budget.
/// Made by [`Delegation::builder`].
#[derive(Debug)]
#[must_use = "a delegation builder does nothing until started"]
pub struct DelegationBuilder {
    message: Message,
    lease: Option<Lease>,
    grant: Option<BudgetGrant>,
}

impl DelegationBuilder {
    /// The child's agent cancels the task when `lease` lapses unrenewed;
    /// [`Delegation::wait`] renews it.
    pub fn with_lease(mut self, lease: Lease) -> Self {
        self.lease = Some(lease);
        self
    }

    /// The child's turn is bounded by `grant`.
    pub fn with_budget(mut self, grant: BudgetGrant) -> Self {
        self.grant = Some(grant);
        self
    }

    /// Starts the child task through `client`, with a fresh idempotency key when the message
    /// has none and the client's agent honours keys (as [`Delegation::start`]).
    ///
    /// # Errors
    ///
    /// As [`Delegation::start`].
    pub async fn start(self, client: &A2aClient) -> Result<Delegation, ClientError> {
        Delegation::launch(client, self.message, self.lease, self.grant).await
    }
}

const FIRST_POLL: Duration = Duration::from_millis(50);
const MAX_POLL: Duration = Duration::from_secs(1);

impl Delegation {
    /// Starts a child task with `message`.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::Delegation;
    /// use a2a_protocol_types::Message;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let child = Delegation::start(&client, Message::user_text("index the repository")).await?;
    /// println!("child {:?} with key {:?}", child.task_id(), child.idempotency_key());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn start(client: &A2aClient, message: Message) -> Result<Self, ClientError> {
        Self::launch(client, message, None, None).await
    }

    /// Starts a child task that the child's agent cancels when `lease` lapses unrenewed.
    /// [`Delegation::wait`] renews it.
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::Delegation;
    /// use a2a_protocol_types::Message;
    /// use a2a_protocol_types::lease::Lease;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let lease = Lease::new(Duration::from_secs(30));
    /// let mut child = Delegation::start_leased(&client, Message::user_text("crawl"), lease).await?;
    /// child.wait().await?; // Renews the lease every 10 s until the child settles.
    /// # Ok(())
    /// # }
    /// ```
    pub async fn start_leased(
        client: &A2aClient,
        message: Message,
        lease: Lease,
    ) -> Result<Self, ClientError> {
        Self::launch(client, message, Some(lease), None).await
    }

    /// Starts a child task bounded by `grant`.
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::Delegation;
    /// use a2a_protocol_types::Message;
    /// use a2a_protocol_types::budget::BudgetGrant;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let grant = BudgetGrant::with_time(Duration::from_secs(20)).with_meter("tokens", 4_000);
    /// let mut child = Delegation::start_budgeted(&client, Message::user_text("draft a reply"), grant).await?;
    /// child.wait().await?;
    /// println!("spent: {:?}", child.spend());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn start_budgeted(
        client: &A2aClient,
        message: Message,
        grant: BudgetGrant,
    ) -> Result<Self, ClientError> {
        Self::launch(client, message, None, Some(grant)).await
    }

    /// Prepares a child task with any combination of a lease and a budget; start it with
    /// [`DelegationBuilder::start`].
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::Delegation;
    /// use a2a_protocol_types::Message;
    /// use a2a_protocol_types::budget::BudgetGrant;
    /// use a2a_protocol_types::lease::Lease;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let mut child = Delegation::builder(Message::user_text("summarise the logs"))
    ///     .with_lease(Lease::new(Duration::from_secs(30)))
    ///     .with_budget(BudgetGrant::with_time(Duration::from_secs(120)))
    ///     .start(&client)
    ///     .await?;
    /// child.wait().await?; // Renews the lease until the child settles.
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(message: Message) -> DelegationBuilder {
        DelegationBuilder {
            message,
            lease: None,
            grant: None,
        }
    }

    async fn launch(
        client: &A2aClient,
        mut message: Message,
        lease: Option<Lease>,
        grant: Option<BudgetGrant>,
    ) -> Result<Self, ClientError> {
        // A lease already on the message (set by hand) is renewed like one passed here.
        let lease = match lease {
            Some(lease) => Some(lease),
            None => lease_of(&message)
                .map_err(|e| ClientError::Config(format!("the message's lease: {e}")))?,
        };
        let key = match key_of(&message) {
            Ok(Some(key)) => Some(key.to_owned()),
            Ok(None) if client.honours_idempotency() => {
                let key = generate_key();
                set_key(&mut message, &key).map_err(|e| ClientError::Config(e.to_string()))?;
                Some(key)
            }
            Ok(None) => None,
            Err(error) => {
                return Err(ClientError::Config(format!(
                    "the message's idempotency key: {error}"
                )));
            }
        };
        if let Some(lease) = lease {
            set_lease(&mut message, lease).map_err(|e| ClientError::Config(e.to_string()))?;
        }
        if let Some(grant) = &grant {
            set_budget(&mut message, grant).map_err(|e| ClientError::Config(e.to_string()))?;
        }
        let mut request = SendMessageRequest::new(message);
        request.configuration = Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        });
        let answer = client.send_message(request).await?;
        let mut delegation = Self {
            client: client.clone(),
            renewing: lease.map(|_| client.activating(&[LEASE_EXTENSION_URI])),
            task_id: None,
            key,
            lease,
            last: None,
            outcome: None,
            detached: false,
        };
        match answer {
            SendMessageResponse::Task(task) => {
                delegation.task_id = Some(task.id.clone());
                delegation.observe(task);
            }
            SendMessageResponse::Message(reply) => {
                delegation.outcome = Some(DelegationOutcome::Replied(reply))
            }
        }
        Ok(delegation)
    }

    fn observe(&mut self, task: Task) {
        if task.status.state.is_settled() {
            self.outcome = DelegationOutcome::of(task.clone());
        }
        self.last = Some(task);
    }

    /// The idempotency key the child's message carried, if any.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::Delegation;
    /// use a2a_protocol_types::Message;
    /// use a2a_protocol_types::idempotency::{generate_key, set_key};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// // Set the key first when you may resend after a failed start yourself.
    /// let key = generate_key();
    /// let mut message = Message::user_text("bill the customer");
    /// set_key(&mut message, &key)?;
    /// let child = Delegation::start(&client, message).await?;
    /// assert_eq!(child.idempotency_key(), Some(key.as_str()), "a key you set is kept");
    /// # Ok(())
    /// # }
    /// ```
    pub fn idempotency_key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The child task's id (none when the agent replied with a message).
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::Delegation;
    /// use a2a_protocol_types::Message;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let child = Delegation::start(&client, Message::user_text("work")).await?;
    /// if let Some(id) = child.task_id() {
    ///     println!("started {id}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn task_id(&self) -> Option<&TaskId> {
        self.task_id.as_ref()
    }

    /// The child as last seen.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::Delegation;
    /// use a2a_protocol_types::Message;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let child = Delegation::start(&client, Message::user_text("work")).await?;
    /// println!("{:?}", child.task().map(|t| t.status.state));
    /// # Ok(())
    /// # }
    /// ```
    pub fn task(&self) -> Option<&Task> {
        self.last.as_ref()
    }

    /// What the child reported of its budget when last seen.
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::Delegation;
    /// use a2a_protocol_types::Message;
    /// use a2a_protocol_types::budget::BudgetGrant;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let grant = BudgetGrant::with_time(Duration::from_secs(5));
    /// let mut child = Delegation::start_budgeted(&client, Message::user_text("work"), grant).await?;
    /// child.wait().await?;
    /// if let Some(report) = child.spend() {
    ///     println!("{} ms spent, exhausted: {:?}", report.spent_ms, report.exhausted);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn spend(&self) -> Option<BudgetReport> {
        self.last
            .as_ref()
            .and_then(|t| report_of(t.metadata.as_ref()))
    }

    /// Reads the child now; renews its lease when it has one.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::Delegation;
    /// use a2a_protocol_types::Message;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let mut child = Delegation::start(&client, Message::user_text("work")).await?;
    /// let state = child.refresh().await?.status.state;
    /// println!("the child is {state}");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn refresh(&mut self) -> Result<&Task, ClientError> {
        let Some(id) = self.task_id.clone() else {
            return Err(ClientError::Config(
                "the agent replied with a message; there is no child task".into(),
            ));
        };
        let client = self.renewing.as_ref().unwrap_or(&self.client);
        let task = client
            .get_task(GetTaskRequest {
                tenant: String::new(),
                id,
                history_length: Some(0),
            })
            .await?;
        self.observe(task);
        self.last
            .as_ref()
            .ok_or_else(|| ClientError::Decode("no task after a refresh".into()))
    }

    /// Waits until the child settles (terminal, or waiting for input), renewing its lease every
    /// third of the TTL meanwhile.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::{Delegation, DelegationOutcome};
    /// use a2a_protocol_types::Message;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let mut child = Delegation::start(&client, Message::user_text("work")).await?;
    /// match child.wait().await? {
    ///     DelegationOutcome::Completed(task) => println!("done: {}", task.id),
    ///     DelegationOutcome::InputRequired(task) => println!("it asks: {:?}", task.status.message),
    ///     other => println!("ended: {other:?}"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn wait(&mut self) -> Result<DelegationOutcome, ClientError> {
        // Each poll renews the lease, so polls never fall further apart than a third of it.
        let cap = self.lease.map_or(MAX_POLL, |l| (l.ttl() / 3).min(MAX_POLL));
        let mut pause = FIRST_POLL.min(cap);
        loop {
            if let Some(outcome) = &self.outcome {
                return Ok(outcome.clone());
            }
            self.refresh().await?;
            if self.outcome.is_none() {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(cap);
            }
        }
    }

    /// Cancels the child.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::Delegation;
    /// use a2a_protocol_types::Message;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let mut child = Delegation::start(&client, Message::user_text("work")).await?;
    /// let task = child.cancel().await?;
    /// println!("{}", task.status.state);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn cancel(&mut self) -> Result<Task, ClientError> {
        let Some(id) = self.task_id.clone() else {
            return Err(ClientError::Config(
                "the agent replied with a message; there is no child task".into(),
            ));
        };
        let task = self
            .client
            .cancel_task(CancelTaskRequest {
                tenant: String::new(),
                id,
                metadata: None,
            })
            .await?;
        self.observe(task.clone());
        Ok(task)
    }

    /// Lets the child run on its own: dropping this no longer cancels it (a leased child still
    /// ends when its lease lapses, since nothing renews it). Returns the child's id.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::delegation::Delegation;
    /// use a2a_protocol_types::Message;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let child = Delegation::start(&client, Message::user_text("nightly report")).await?;
    /// let id = child.detach(); // Runs on after we return; look it up later with GetTask.
    /// println!("{id:?}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn detach(mut self) -> Option<TaskId> {
        self.detached = true;
        self.task_id.clone()
    }
}

impl Drop for Delegation {
    fn drop(&mut self) {
        if self.detached || self.outcome.is_some() {
            return;
        }
        let (Some(id), Ok(runtime)) = (self.task_id.clone(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let client = self.client.clone();
        runtime.spawn(async move {
            let request = CancelTaskRequest {
                tenant: String::new(),
                id,
                metadata: None,
            };
            if let Err(error) = client.cancel_task(request).await {
                tracing::debug!(%error, "could not cancel a dropped delegation's child");
            }
        });
    }
}

/// A parent's own budget, from which it carves its children's grants.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_client::delegation::ParentBudget;
/// use a2a_protocol_types::budget::BudgetGrant;
///
/// let mut parent = ParentBudget::new(&BudgetGrant::default().with_meter("calls", 10));
/// let child = parent.carve(&BudgetGrant::default().with_meter("calls", 4), Duration::ZERO);
/// assert_eq!(child.meters["calls"], 4);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ParentBudget {
    deadline: Option<Instant>,
    meters: BTreeMap<String, u64>,
}

impl ParentBudget {
    /// The budget a parent was granted (say, `RequestContext::budget` on an agent).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::delegation::ParentBudget;
    /// use a2a_protocol_types::budget::BudgetGrant;
    ///
    /// let parent = ParentBudget::new(&BudgetGrant::with_time(Duration::from_secs(30)));
    /// assert!(parent.remaining().unwrap() <= Duration::from_secs(30));
    /// ```
    pub fn new(grant: &BudgetGrant) -> Self {
        Self {
            deadline: grant.remaining().map(|d| Instant::now() + d),
            meters: grant.meters.clone(),
        }
    }

    /// An unlimited budget.
    ///
    /// ```
    /// use a2a_protocol_client::delegation::ParentBudget;
    ///
    /// assert_eq!(ParentBudget::unlimited().remaining(), None);
    /// ```
    pub fn unlimited() -> Self {
        Self::default()
    }

    /// Time left, when limited.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::delegation::ParentBudget;
    /// use a2a_protocol_types::budget::BudgetGrant;
    ///
    /// let parent = ParentBudget::new(&BudgetGrant::with_time(Duration::from_secs(10)));
    /// assert!(parent.remaining().is_some_and(|left| left <= Duration::from_secs(10)));
    /// ```
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// A grant for a child: what it asks for, but never more than the parent has left after
    /// keeping `reserve` of its time. Granted meters are taken out of the parent's budget.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::delegation::ParentBudget;
    /// use a2a_protocol_types::budget::BudgetGrant;
    ///
    /// let mut parent = ParentBudget::new(&BudgetGrant::with_time(Duration::from_secs(10)));
    /// let grant = parent.carve(&BudgetGrant::with_time(Duration::from_secs(60)), Duration::from_secs(3));
    /// assert!(grant.remaining().unwrap() <= Duration::from_secs(7), "never past the parent's own end");
    /// ```
    pub fn carve(&mut self, want: &BudgetGrant, reserve: Duration) -> BudgetGrant {
        let available = self.remaining().map(|left| left.saturating_sub(reserve));
        let time = match (want.remaining(), available) {
            (Some(want), Some(available)) => Some(want.min(available)),
            (want, available) => want.or(available),
        };
        let mut meters = BTreeMap::new();
        for (name, amount) in &want.meters {
            let granted = match self.meters.get_mut(name) {
                Some(left) => {
                    let granted = (*amount).min(*left);
                    *left -= granted;
                    granted
                }
                None => *amount,
            };
            meters.insert(name.clone(), granted);
        }
        BudgetGrant {
            remaining_ms: time.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            meters,
        }
    }

    /// Returns what a child did not spend of the meters it was granted.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::delegation::ParentBudget;
    /// use a2a_protocol_types::budget::{BudgetGrant, BudgetReport};
    ///
    /// let mut parent = ParentBudget::new(&BudgetGrant::default().with_meter("tokens", 100));
    /// let granted = parent.carve(&BudgetGrant::default().with_meter("tokens", 100), Duration::ZERO);
    /// let report = BudgetReport { spent: [("tokens".to_owned(), 30)].into(), ..Default::default() };
    /// parent.refund(&granted, &report);
    /// let next = parent.carve(&BudgetGrant::default().with_meter("tokens", 100), Duration::ZERO);
    /// assert_eq!(next.meters["tokens"], 70);
    /// ```
    pub fn refund(&mut self, granted: &BudgetGrant, report: &BudgetReport) {
        for (name, amount) in &granted.meters {
            if let Some(left) = self.meters.get_mut(name) {
                let spent = report.spent.get(name).copied().unwrap_or(0);
                *left += amount.saturating_sub(spent);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_grant_never_exceeds_what_the_parent_has_left_after_its_reserve() {
        let mut parent = ParentBudget::new(
            &BudgetGrant::with_time(Duration::from_secs(10)).with_meter("tokens", 100),
        );
        let want = BudgetGrant::with_time(Duration::from_secs(60))
            .with_meter("tokens", 70)
            .with_meter("calls", 5);
        let child = parent.carve(&want, Duration::from_secs(2));
        assert!(child.remaining().expect("limited") <= Duration::from_secs(8));
        assert_eq!(child.meters["tokens"], 70);
        assert_eq!(
            child.meters["calls"], 5,
            "a meter the parent does not track is not capped"
        );
        let second = parent.carve(&want, Duration::from_secs(2));
        assert_eq!(second.meters["tokens"], 30, "only what is left");
        parent.refund(
            &child,
            &BudgetReport {
                spent: [("tokens".to_owned(), 20)].into(),
                ..BudgetReport::default()
            },
        );
        assert_eq!(parent.carve(&want, Duration::ZERO).meters["tokens"], 50);
    }

    #[test]
    fn an_unlimited_parent_grants_what_is_asked() {
        let mut parent = ParentBudget::unlimited();
        let want = BudgetGrant::with_time(Duration::from_secs(3));
        assert_eq!(parent.carve(&want, Duration::from_secs(1)), want);
    }
}
