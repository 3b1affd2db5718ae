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
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }

    /// Input or auth required: the task waits for the client.
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }

    /// Terminal or interrupted: where a blocking send returns and a stream closes.
    pub fn is_settled(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }
}

/// The state of a task, with an optional message and when it was set.
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
    pub fn new(state: TaskState) -> Self {
        Self {
            state,
            message: None,
            timestamp: Some(Timestamp::now()),
        }
    }

    /// Attaches a message.
    pub fn with_message(mut self, message: Message) -> Self {
        self.message = Some(message);
        self
    }
}

/// A unit of work the agent does for a client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Chosen by the server.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub id: TaskId,
    /// The conversation the task belongs to.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "ContextId::is_empty")]
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
}

impl Task {
    /// A task with the given ids and status, and nothing else.
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
        }
    }

    /// Keeps at most the `n` most recent history messages (spec §3.2.4); `None` keeps all.
    pub fn truncate_history(&mut self, n: Option<usize>) {
        if let Some(n) = n {
            let excess = self.history.len().saturating_sub(n);
            self.history.drain(..excess);
        }
    }
}

/// Output produced by a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "ArtifactId::is_empty")]
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
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}
