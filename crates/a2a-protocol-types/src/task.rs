//! Tasks, their status and their artifacts (spec §4.1.1–4.1.3, §4.1.7).

use serde::{Deserialize, Serialize};

use crate::Metadata;
use crate::ids::{ArtifactId, ContextId, TaskId};
use crate::message::{Message, Part};
use crate::proto_enum::proto_enum;
use crate::serde_util;
use crate::timestamp::Timestamp;

proto_enum! {
    /// Where a task is in its lifecycle.
    ///
    /// ```
    /// use a2a_protocol_types::TaskState;
    ///
    /// assert_eq!(serde_json::to_value(TaskState::Completed).unwrap(), "TASK_STATE_COMPLETED");
    /// assert_eq!("input-required".parse::<TaskState>().unwrap(), TaskState::InputRequired);
    /// ```
    pub enum TaskState {
        /// Not set; never a valid state for a stored task.
        Unspecified = ("TASK_STATE_UNSPECIFIED", 0),
        /// Accepted, not yet started.
        Submitted = ("TASK_STATE_SUBMITTED", 1, "submitted"),
        /// Running.
        Working = ("TASK_STATE_WORKING", 2, "working"),
        /// Finished successfully (terminal).
        Completed = ("TASK_STATE_COMPLETED", 3, "completed"),
        /// Finished with an error (terminal).
        Failed = ("TASK_STATE_FAILED", 4, "failed"),
        /// Canceled by a client (terminal).
        Canceled = ("TASK_STATE_CANCELED", 5, "canceled"),
        /// Waiting for the client to send more input (interrupted).
        InputRequired = ("TASK_STATE_INPUT_REQUIRED", 6, "input-required"),
        /// Refused by the agent (terminal).
        Rejected = ("TASK_STATE_REJECTED", 7, "rejected"),
        /// Waiting for the client to authenticate (interrupted).
        AuthRequired = ("TASK_STATE_AUTH_REQUIRED", 8, "auth-required"),
    }
}

impl TaskState {
    /// Completed, failed, canceled or rejected: nothing more will happen to the task.
    ///
    /// ```
    /// use a2a_protocol_types::TaskState;
    ///
    /// assert!(TaskState::Canceled.is_terminal());
    /// assert!(!TaskState::InputRequired.is_terminal());
    /// ```
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }

    /// Input or auth required: the task waits for the client.
    ///
    /// ```
    /// use a2a_protocol_types::TaskState;
    ///
    /// assert!(TaskState::AuthRequired.is_interrupted());
    /// assert!(!TaskState::Working.is_interrupted());
    /// ```
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }

    /// Terminal or interrupted: where a blocking send returns and a stream closes.
    ///
    /// ```
    /// use a2a_protocol_types::TaskState;
    ///
    /// let settled: Vec<TaskState> = TaskState::ALL.iter().copied().filter(|s| s.is_settled()).collect();
    /// assert_eq!(settled.len(), 6, "four terminal states and two interrupted ones");
    /// ```
    pub fn is_settled(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }
}

/// The state of a task, with an optional message and when it was set.
///
/// ```
/// use a2a_protocol_types::{TaskState, TaskStatus};
///
/// let status: TaskStatus = serde_json::from_str(r#"{"state": "TASK_STATE_WORKING"}"#).unwrap();
/// assert_eq!(status.state, TaskState::Working);
/// assert!(status.timestamp.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// A message from the agent about the state, such as the question for `input-required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the state was entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
}

impl TaskStatus {
    /// A status in `state`, stamped now, with no message.
    ///
    /// ```
    /// use a2a_protocol_types::{TaskState, TaskStatus};
    ///
    /// let status = TaskStatus::new(TaskState::Submitted);
    /// assert!(status.timestamp.is_some() && status.message.is_none());
    /// ```
    pub fn new(state: TaskState) -> Self {
        Self {
            state,
            message: None,
            timestamp: Some(Timestamp::now()),
        }
    }

    /// Attaches a message.
    ///
    /// ```
    /// use a2a_protocol_types::{Message, TaskState, TaskStatus};
    ///
    /// let status = TaskStatus::new(TaskState::InputRequired).with_message(Message::agent_text("Which file?"));
    /// assert_eq!(status.message.unwrap().text(), "Which file?");
    /// ```
    pub fn with_message(mut self, message: Message) -> Self {
        self.message = Some(message);
        self
    }
}

/// A unit of work the agent does for a client.
///
/// ```
/// use a2a_protocol_types::{Task, TaskState};
///
/// let task: Task = serde_json::from_str(
///     r#"{"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"},
///         "artifacts": [{"artifactId": "a-1", "parts": [{"text": "done"}]}]}"#,
/// )
/// .unwrap();
/// assert_eq!(task.status.state, TaskState::Completed);
/// assert_eq!(task.artifacts[0].parts[0].as_text(), Some("done"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Chosen by the server.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub id: TaskId,
    /// The conversation the task belongs to.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "ContextId::is_empty")]
    #[serde(alias = "context_id")]
    pub context_id: ContextId,
    /// The current status.
    pub status: TaskStatus,
    /// What the task produced.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The messages exchanged, oldest first.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Free-form data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// How many changes the server has accepted for the task, counting its creation: every
    /// status change, artifact and message it records increases it. Zero when unknown.
    ///
    /// This is the `generation` of the A2A v1.1 draft, which v1.0 does not have: the JSON
    /// this type writes is v1.0's and leaves it out, because strict v1.0 readers (protobuf JSON
    /// parsers, the conformance suite) refuse a member their schema lacks. It is read when a
    /// newer peer sends it, as a number or as the decimal string ProtoJSON writes for an int64.
    ///
    /// ```
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
    /// task.generation = 3;
    /// assert!(serde_json::to_value(&task).unwrap().get("generation").is_none());
    /// let read: Task = serde_json::from_str(
    ///     r#"{"id": "t-1", "status": {"state": "TASK_STATE_WORKING"}, "generation": "3"}"#,
    /// )
    /// .unwrap();
    /// assert_eq!(read.generation, 3);
    /// ```
    #[serde(default, deserialize_with = "serde_util::int64", skip_serializing)]
    pub generation: u64,
}

impl Task {
    /// A task with the given ids and status, and nothing else.
    ///
    /// ```
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// let task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Submitted));
    /// assert_eq!((task.id.as_str(), task.context_id.as_str()), ("t-1", "c-1"));
    /// assert!(task.history.is_empty() && task.artifacts.is_empty());
    /// ```
    pub fn new(
        id: impl Into<TaskId>,
        context_id: impl Into<ContextId>,
        status: TaskStatus,
    ) -> Self {
        Self {
            id: id.into(),
            context_id: context_id.into(),
            status,
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: None,
            generation: 0,
        }
    }

    /// Keeps at most the `n` most recent history messages (spec §3.2.4); `None` keeps all.
    ///
    /// ```
    /// use a2a_protocol_types::{Message, Task, TaskState, TaskStatus};
    ///
    /// let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
    /// task.history = vec![Message::user_text("one"), Message::agent_text("two"), Message::user_text("three")];
    /// task.truncate_history(Some(2));
    /// assert_eq!(task.history.iter().map(Message::text).collect::<Vec<_>>(), ["two", "three"]);
    /// task.truncate_history(None);
    /// assert_eq!(task.history.len(), 2, "None keeps everything");
    /// ```
    pub fn truncate_history(&mut self, n: Option<usize>) {
        if let Some(n) = n {
            let excess = self.history.len().saturating_sub(n);
            self.history.drain(..excess);
        }
    }
}

/// Output produced by a task.
///
/// ```
/// use a2a_protocol_types::{Artifact, Part};
///
/// let artifact = Artifact::new("summary", vec![Part::text("All systems nominal.")]).with_name("Summary");
/// let json = serde_json::to_value(&artifact).unwrap();
/// assert_eq!(json["artifactId"], "summary");
/// assert_eq!(json["name"], "Summary");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "ArtifactId::is_empty")]
    #[serde(alias = "artifact_id")]
    pub artifact_id: ArtifactId,
    /// A human-readable name.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A human-readable description.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub parts: Vec<Part>,
    /// Free-form data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// URIs of the extensions whose data this artifact carries.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

impl Artifact {
    /// An artifact with the given id and parts.
    ///
    /// ```
    /// use a2a_protocol_types::{Artifact, Part};
    ///
    /// let artifact = Artifact::new("a-1", vec![Part::text("hi")]);
    /// assert_eq!(artifact.artifact_id.as_str(), "a-1");
    /// assert!(artifact.name.is_none());
    /// ```
    pub fn new(artifact_id: impl Into<ArtifactId>, parts: Vec<Part>) -> Self {
        Self {
            artifact_id: artifact_id.into(),
            name: None,
            description: None,
            parts,
            metadata: None,
            extensions: Vec::new(),
        }
    }

    /// Sets the name.
    ///
    /// ```
    /// use a2a_protocol_types::{Artifact, Part};
    ///
    /// assert_eq!(Artifact::new("a-1", vec![Part::text("hi")]).with_name("Greeting").name.as_deref(), Some("Greeting"));
    /// ```
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}
