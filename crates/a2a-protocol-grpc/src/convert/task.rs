//! Messages, parts, tasks, artifacts and stream events.

use a2a_protocol_types::{
    Artifact, ArtifactId, ContextId, Message, MessageId, MessageRole, Part, PartContent,
    StreamResponse, Task, TaskArtifactUpdateEvent, TaskId, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};

use super::{
    ProtoError, from_metadata, from_timestamp, from_value, required, some, some_list, to_metadata,
    to_timestamp, to_value,
};
use crate::pb;

// Toward the wire, each value converts from a borrow (see `to_struct`); the owned
// conversions below are that, for callers that hold the value.
impl From<&Part> for pb::Part {
    fn from(part: &Part) -> Self {
        let content = match &part.content {
            PartContent::Text(text) => pb::part::Content::Text(text.clone()),
            PartContent::Raw(bytes) => pb::part::Content::Raw(bytes.clone()),
            PartContent::Url(url) => pb::part::Content::Url(url.clone()),
            PartContent::Data(data) => pb::part::Content::Data(to_value(data)),
        };
        pb::Part {
            content: Some(content),
            metadata: to_metadata(part.metadata.as_ref()),
            filename: part.filename.clone().unwrap_or_default(),
            media_type: part.media_type.clone().unwrap_or_default(),
        }
    }
}

impl TryFrom<pb::Part> for Part {
    type Error = ProtoError;

    fn try_from(part: pb::Part) -> Result<Self, ProtoError> {
        let content = match required(part.content, "Part.content")? {
            pb::part::Content::Text(text) => PartContent::Text(text),
            pb::part::Content::Raw(bytes) => PartContent::Raw(bytes),
            pb::part::Content::Url(url) => PartContent::Url(url),
            pb::part::Content::Data(data) => PartContent::Data(from_value(data)),
        };
        Ok(Part {
            content,
            metadata: from_metadata(part.metadata),
            filename: some(part.filename),
            media_type: some(part.media_type),
        })
    }
}

fn parts(parts: Vec<pb::Part>) -> Result<Vec<Part>, ProtoError> {
    parts.into_iter().map(Part::try_from).collect()
}

impl From<&Message> for pb::Message {
    fn from(message: &Message) -> Self {
        pb::Message {
            message_id: message.id.as_str().to_owned(),
            context_id: text_of(message.context_id.as_ref().map(ContextId::as_str)),
            task_id: text_of(message.task_id.as_ref().map(TaskId::as_str)),
            role: message.role.number(),
            parts: message.parts.iter().map(pb::Part::from).collect(),
            metadata: to_metadata(message.metadata.as_ref()),
            extensions: message.extensions.clone().unwrap_or_default(),
            reference_task_ids: message
                .reference_task_ids
                .iter()
                .flatten()
                .map(|id| id.as_str().to_owned())
                .collect(),
        }
    }
}

impl From<Message> for pb::Message {
    fn from(message: Message) -> Self {
        Self::from(&message)
    }
}

/// An optional text as a proto string (unset is empty).
fn text_of(text: Option<&str>) -> String {
    text.map(str::to_owned).unwrap_or_default()
}

impl TryFrom<pb::Message> for Message {
    type Error = ProtoError;

    fn try_from(message: pb::Message) -> Result<Self, ProtoError> {
        Ok(Message {
            id: MessageId::new(message.message_id),
            role: MessageRole::from_number(message.role.into()).unwrap_or(MessageRole::Unspecified),
            parts: parts(message.parts)?,
            context_id: some(message.context_id).map(ContextId::new),
            task_id: some(message.task_id).map(TaskId::new),
            reference_task_ids: some_list(message.reference_task_ids)
                .map(|ids| ids.into_iter().map(TaskId::new).collect()),
            extensions: some_list(message.extensions),
            metadata: from_metadata(message.metadata),
        })
    }
}

pub(super) fn state(number: i32) -> TaskState {
    TaskState::from_number(number.into()).unwrap_or(TaskState::Unspecified)
}

impl From<&TaskStatus> for pb::TaskStatus {
    fn from(status: &TaskStatus) -> Self {
        pb::TaskStatus {
            state: status.state.number(),
            message: status.message.as_ref().map(pb::Message::from),
            timestamp: status.timestamp.map(to_timestamp),
        }
    }
}

impl TryFrom<pb::TaskStatus> for TaskStatus {
    type Error = ProtoError;

    fn try_from(status: pb::TaskStatus) -> Result<Self, ProtoError> {
        Ok(TaskStatus {
            state: state(status.state),
            message: status.message.map(Message::try_from).transpose()?,
            timestamp: status
                .timestamp
                .map(|t| from_timestamp(t, "TaskStatus.timestamp"))
                .transpose()?,
        })
    }
}

impl From<&Artifact> for pb::Artifact {
    fn from(artifact: &Artifact) -> Self {
        pb::Artifact {
            artifact_id: artifact.artifact_id.as_str().to_owned(),
            name: artifact.name.clone().unwrap_or_default(),
            description: artifact.description.clone().unwrap_or_default(),
            parts: artifact.parts.iter().map(pb::Part::from).collect(),
            metadata: to_metadata(artifact.metadata.as_ref()),
            extensions: artifact.extensions.clone(),
        }
    }
}

impl TryFrom<pb::Artifact> for Artifact {
    type Error = ProtoError;

    fn try_from(artifact: pb::Artifact) -> Result<Self, ProtoError> {
        Ok(Artifact {
            artifact_id: ArtifactId::new(artifact.artifact_id),
            name: some(artifact.name),
            description: some(artifact.description),
            parts: parts(artifact.parts)?,
            metadata: from_metadata(artifact.metadata),
            extensions: artifact.extensions,
        })
    }
}

impl From<&Task> for pb::Task {
    fn from(task: &Task) -> Self {
        pb::Task {
            id: task.id.as_str().to_owned(),
            context_id: task.context_id.as_str().to_owned(),
            status: Some((&task.status).into()),
            artifacts: task.artifacts.iter().map(pb::Artifact::from).collect(),
            history: task.history.iter().map(pb::Message::from).collect(),
            metadata: to_metadata(task.metadata.as_ref()),
        }
    }
}

impl From<Task> for pb::Task {
    fn from(task: Task) -> Self {
        Self::from(&task)
    }
}

impl TryFrom<pb::Task> for Task {
    type Error = ProtoError;

    fn try_from(task: pb::Task) -> Result<Self, ProtoError> {
        let mut out = Task::new(
            task.id,
            task.context_id,
            required(task.status, "Task.status")?.try_into()?,
        );
        out.artifacts = task
            .artifacts
            .into_iter()
            .map(Artifact::try_from)
            .collect::<Result<_, _>>()?;
        out.history = task
            .history
            .into_iter()
            .map(Message::try_from)
            .collect::<Result<_, _>>()?;
        out.metadata = from_metadata(task.metadata);
        Ok(out)
    }
}

impl From<TaskStatusUpdateEvent> for pb::TaskStatusUpdateEvent {
    fn from(event: TaskStatusUpdateEvent) -> Self {
        pb::TaskStatusUpdateEvent {
            task_id: event.task_id.into_string(),
            context_id: event.context_id.into_string(),
            status: Some((&event.status).into()),
            metadata: to_metadata(event.metadata.as_ref()),
        }
    }
}

impl TryFrom<pb::TaskStatusUpdateEvent> for TaskStatusUpdateEvent {
    type Error = ProtoError;

    fn try_from(event: pb::TaskStatusUpdateEvent) -> Result<Self, ProtoError> {
        Ok(TaskStatusUpdateEvent {
            task_id: TaskId::new(event.task_id),
            context_id: ContextId::new(event.context_id),
            status: required(event.status, "TaskStatusUpdateEvent.status")?.try_into()?,
            metadata: from_metadata(event.metadata),
            generation: 0,
        })
    }
}

impl From<TaskArtifactUpdateEvent> for pb::TaskArtifactUpdateEvent {
    fn from(event: TaskArtifactUpdateEvent) -> Self {
        pb::TaskArtifactUpdateEvent {
            task_id: event.task_id.into_string(),
            context_id: event.context_id.into_string(),
            artifact: Some((&event.artifact).into()),
            append: event.append,
            last_chunk: event.last_chunk,
            metadata: to_metadata(event.metadata.as_ref()),
        }
    }
}

impl TryFrom<pb::TaskArtifactUpdateEvent> for TaskArtifactUpdateEvent {
    type Error = ProtoError;

    fn try_from(event: pb::TaskArtifactUpdateEvent) -> Result<Self, ProtoError> {
        Ok(TaskArtifactUpdateEvent {
            task_id: TaskId::new(event.task_id),
            context_id: ContextId::new(event.context_id),
            artifact: required(event.artifact, "TaskArtifactUpdateEvent.artifact")?.try_into()?,
            append: event.append,
            last_chunk: event.last_chunk,
            metadata: from_metadata(event.metadata),
            generation: 0,
        })
    }
}

impl From<StreamResponse> for pb::StreamResponse {
    fn from(event: StreamResponse) -> Self {
        use pb::stream_response::Payload;
        let payload = match event {
            StreamResponse::Task(task) => Payload::Task(task.into()),
            StreamResponse::Message(message) => Payload::Message(message.into()),
            StreamResponse::StatusUpdate(update) => Payload::StatusUpdate(update.into()),
            StreamResponse::ArtifactUpdate(update) => Payload::ArtifactUpdate(update.into()),
        };
        pb::StreamResponse {
            payload: Some(payload),
        }
    }
}

impl TryFrom<pb::StreamResponse> for StreamResponse {
    type Error = ProtoError;

    fn try_from(event: pb::StreamResponse) -> Result<Self, ProtoError> {
        use pb::stream_response::Payload;
        Ok(match required(event.payload, "StreamResponse.payload")? {
            Payload::Task(task) => StreamResponse::Task(task.try_into()?),
            Payload::Message(message) => StreamResponse::Message(message.try_into()?),
            Payload::StatusUpdate(update) => StreamResponse::StatusUpdate(update.try_into()?),
            Payload::ArtifactUpdate(update) => StreamResponse::ArtifactUpdate(update.try_into()?),
        })
    }
}
