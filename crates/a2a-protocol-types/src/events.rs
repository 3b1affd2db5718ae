//! Streaming events and the stream's envelope (spec §3.2.3, §4.2).

use serde::{Deserialize, Serialize};

use crate::Metadata;
use crate::ids::{ContextId, TaskId};
use crate::message::Message;
use crate::serde_util;
use crate::task::{Artifact, Task, TaskStatus};

/// A task's status changed.
///
/// ```
/// use a2a_protocol_types::{StreamResponse, TaskState};
///
/// let event: StreamResponse = serde_json::from_str(
///     r#"{"statusUpdate": {"taskId": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_WORKING"}}}"#,
/// )
/// .unwrap();
/// let StreamResponse::StatusUpdate(update) = event else { panic!("a status update") };
/// assert_eq!(update.status.state, TaskState::Working);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "TaskId::is_empty")]
    #[serde(alias = "task_id")]
    pub task_id: TaskId,
    /// The task's context.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "ContextId::is_empty")]
    #[serde(alias = "context_id")]
    pub context_id: ContextId,
    /// The new status.
    pub status: TaskStatus,
    /// Free-form data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// The task's generation once this event was recorded (see [`Task::generation`]): a gap
    /// between two events tells a client it missed one. Zero when unknown. Read when a peer
    /// sends it, never written (A2A v1.0 has no such field).
    #[serde(default, deserialize_with = "serde_util::int64", skip_serializing)]
    pub generation: u64,
}

/// A task produced an artifact, or another chunk of one.
///
/// ```
/// use a2a_protocol_types::StreamResponse;
///
/// let event: StreamResponse = serde_json::from_str(
///     r#"{"artifactUpdate": {"taskId": "t-1", "artifact": {"artifactId": "a-1", "parts": [{"text": "more"}]},
///         "append": true, "lastChunk": true}}"#,
/// )
/// .unwrap();
/// let StreamResponse::ArtifactUpdate(update) = event else { panic!("an artifact update") };
/// assert!(update.append && update.last_chunk);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "TaskId::is_empty")]
    #[serde(alias = "task_id")]
    pub task_id: TaskId,
    /// The task's context.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "ContextId::is_empty")]
    #[serde(alias = "context_id")]
    pub context_id: ContextId,
    /// The artifact, or the chunk to append.
    pub artifact: Artifact,
    /// Append these parts to the artifact with the same id instead of replacing it.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "serde_util::is_false")]
    pub append: bool,
    /// This is the artifact's final chunk.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "serde_util::is_false")]
    #[serde(alias = "last_chunk")]
    pub last_chunk: bool,
    /// Free-form data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// The task's generation once this event was recorded (see [`Task::generation`]): a gap
    /// between two events tells a client it missed one. Zero when unknown. Read when a peer
    /// sends it, never written (A2A v1.0 has no such field).
    #[serde(default, deserialize_with = "serde_util::int64", skip_serializing)]
    pub generation: u64,
}

/// One event of a stream (and the payload of a push notification): exactly one of four kinds.
///
/// ```
/// use a2a_protocol_types::{Message, StreamResponse};
///
/// let event = StreamResponse::Message(Message::agent_text("hello"));
/// let json = serde_json::to_value(&event).unwrap();
/// assert_eq!(json["message"]["role"], "ROLE_AGENT", "one wrapper key names the kind");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// A snapshot of the task; the first event of a task stream.
    Task(Task),
    /// A direct reply; the only event of a message stream.
    Message(Message),
    /// The task's status changed.
    #[serde(alias = "status_update")]
    StatusUpdate(TaskStatusUpdateEvent),
    /// The task produced an artifact chunk.
    #[serde(alias = "artifact_update")]
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// The task this event is about, if any.
    ///
    /// ```
    /// use a2a_protocol_types::{StreamResponse, Task, TaskState, TaskStatus};
    ///
    /// let event = StreamResponse::Task(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Submitted)));
    /// assert_eq!(event.task_id().map(|id| id.as_str()), Some("t-1"));
    /// ```
    pub fn task_id(&self) -> Option<&TaskId> {
        match self {
            Self::Task(task) => Some(&task.id),
            Self::Message(message) => message.task_id.as_ref(),
            Self::StatusUpdate(event) => Some(&event.task_id),
            Self::ArtifactUpdate(event) => Some(&event.task_id),
        }
    }

    /// The task generation this event carries (see [`Task::generation`]); zero for a direct
    /// message, which has none, and when unknown.
    ///
    /// ```
    /// use a2a_protocol_types::{Message, StreamResponse, Task, TaskState, TaskStatus};
    ///
    /// let mut event = StreamResponse::Task(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
    /// event.set_generation(4);
    /// assert_eq!(event.generation(), 4);
    /// let mut reply = StreamResponse::Message(Message::agent_text("hi"));
    /// reply.set_generation(4);
    /// assert_eq!(reply.generation(), 0, "a message has no generation");
    /// ```
    pub fn generation(&self) -> u64 {
        match self {
            Self::Task(task) => task.generation,
            Self::StatusUpdate(event) => event.generation,
            Self::ArtifactUpdate(event) => event.generation,
            Self::Message(_) => 0,
        }
    }

    /// Sets the task generation this event carries; a message has none and stays as it is.
    pub fn set_generation(&mut self, generation: u64) {
        match self {
            Self::Task(task) => task.generation = generation,
            Self::StatusUpdate(event) => event.generation = generation,
            Self::ArtifactUpdate(event) => event.generation = generation,
            Self::Message(_) => {}
        }
    }

    /// Whether this event ends a stream: a message, or a task or status in a settled state.
    ///
    /// ```
    /// use a2a_protocol_types::{Message, StreamResponse, Task, TaskState, TaskStatus};
    ///
    /// let working = StreamResponse::Task(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
    /// assert!(!working.is_final());
    /// assert!(StreamResponse::Message(Message::agent_text("hi")).is_final());
    /// ```
    pub fn is_final(&self) -> bool {
        match self {
            Self::Message(_) => true,
            Self::Task(task) => task.status.state.is_settled(),
            Self::StatusUpdate(event) => event.status.state.is_settled(),
            Self::ArtifactUpdate(_) => false,
        }
    }
}
