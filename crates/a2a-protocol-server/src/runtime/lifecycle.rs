//! Which state changes a task may make, and how each event changes a task.

use a2a_protocol_types::{
    A2aError, Artifact, ErrorKind, Message, StreamResponse, Task, TaskArtifactUpdateEvent,
    TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use serde_json::Value;

/// Marks a task that answered with a direct message, so a replay answers with the message.
pub(crate) const DIRECT_REPLY_METADATA_KEY: &str = "a2a-rust.com/direct-reply";

fn invalid(message: String) -> A2aError {
    A2aError::new(ErrorKind::InvalidAgentResponse, message)
}

/// Whether a task in `from` may move to `to`.
pub(crate) fn may_transition(from: TaskState, to: TaskState) -> bool {
    match (from, to) {
        (_, TaskState::Unspecified) => false,
        (from, _) if from.is_terminal() => false,
        (TaskState::Submitted, TaskState::Submitted) => true,
        (_, TaskState::Submitted) => false,
        _ => true,
    }
}

/// Applies a status change; returns the event to broadcast.
pub(crate) fn apply_status(
    task: &mut Task,
    status: TaskStatus,
) -> Result<StreamResponse, A2aError> {
    let from = task.status.state;
    if !may_transition(from, status.state) {
        return Err(invalid(format!(
            "task {} cannot move from {from} to {}",
            task.id, status.state
        )));
    }
    if let Some(message) = &status.message {
        task.history.push(message.clone());
    }
    task.status = status.clone();
    Ok(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status,
        metadata: None,
        generation: task.generation,
    }))
}

/// Adds an artifact, replaces one with the same id, or appends a chunk to it.
pub(crate) fn apply_artifact(
    task: &mut Task,
    artifact: Artifact,
    append: bool,
    last_chunk: bool,
) -> Result<StreamResponse, A2aError> {
    if task.status.state.is_terminal() {
        return Err(invalid(format!(
            "task {} is {} and takes no more artifacts",
            task.id, task.status.state
        )));
    }
    let existing = task
        .artifacts
        .iter_mut()
        .find(|a| a.artifact_id == artifact.artifact_id);
    // The first chunk of an artifact creates it, so only later chunks are appends.
    let append = append && existing.is_some();
    match (existing, append) {
        (Some(current), true) => {
            current.parts.extend(artifact.parts.iter().cloned());
            if artifact.metadata.is_some() {
                current.metadata.clone_from(&artifact.metadata);
            }
        }
        (Some(current), false) => *current = artifact.clone(),
        (None, _) => task.artifacts.push(artifact.clone()),
    }
    Ok(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        artifact,
        append,
        last_chunk,
        metadata: None,
        generation: task.generation,
    }))
}

/// Records a direct reply: the task completes with the reply as its status message and is
/// marked so a replay answers with the message again.
pub(crate) fn apply_reply(task: &mut Task, reply: Message) -> Result<StreamResponse, A2aError> {
    if task.status.state != TaskState::Submitted || !task.artifacts.is_empty() {
        return Err(invalid(format!(
            "task {} already started; report progress with status updates, not a direct reply",
            task.id
        )));
    }
    task.history.push(reply.clone());
    task.status = TaskStatus::new(TaskState::Completed).with_message(reply.clone());
    task.metadata
        .get_or_insert_with(Default::default)
        .insert(DIRECT_REPLY_METADATA_KEY.into(), Value::Bool(true));
    Ok(StreamResponse::Message(reply))
}

/// The direct reply a task recorded, if it answered with one.
pub(crate) fn direct_reply(task: &Task) -> Option<&Message> {
    let marked = task
        .metadata
        .as_ref()
        .and_then(|m| m.get(DIRECT_REPLY_METADATA_KEY))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if marked {
        task.status.message.as_ref()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use a2a_protocol_types::{Message, Part};

    use super::*;

    fn task(state: TaskState) -> Task {
        Task::new("t", "c", TaskStatus::new(state))
    }

    #[test]
    fn terminal_tasks_never_change_state() {
        for from in [
            TaskState::Completed,
            TaskState::Failed,
            TaskState::Canceled,
            TaskState::Rejected,
        ] {
            for &to in TaskState::ALL {
                assert!(!may_transition(from, to), "{from} -> {to}");
            }
        }
    }

    #[test]
    fn live_tasks_move_anywhere_but_back_to_submitted_or_unspecified() {
        for from in [
            TaskState::Working,
            TaskState::InputRequired,
            TaskState::AuthRequired,
        ] {
            assert!(!may_transition(from, TaskState::Submitted));
            assert!(!may_transition(from, TaskState::Unspecified));
            assert!(may_transition(from, TaskState::Working));
            assert!(may_transition(from, TaskState::Completed));
        }
        assert!(may_transition(TaskState::Submitted, TaskState::Submitted));
    }

    #[test]
    fn an_update_after_the_end_is_an_invalid_agent_response() {
        let mut done = task(TaskState::Completed);
        let error = apply_status(&mut done, TaskStatus::new(TaskState::Working)).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidAgentResponse);
        let error = apply_artifact(
            &mut done,
            Artifact::new("a", vec![Part::text("x")]),
            false,
            true,
        )
        .unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidAgentResponse);
        assert_eq!(done.status.state, TaskState::Completed);
    }

    #[test]
    fn chunks_append_to_the_artifact_they_name() {
        let mut working = task(TaskState::Working);
        let first = apply_artifact(
            &mut working,
            Artifact::new("a", vec![Part::text("1")]),
            true,
            false,
        )
        .expect("ok");
        let StreamResponse::ArtifactUpdate(first) = first else {
            panic!("an artifact event")
        };
        assert!(!first.append, "the first chunk creates the artifact");
        let second = apply_artifact(
            &mut working,
            Artifact::new("a", vec![Part::text("2")]),
            true,
            true,
        )
        .expect("ok");
        let StreamResponse::ArtifactUpdate(second) = second else {
            panic!("an artifact event")
        };
        assert!(second.append && second.last_chunk);
        assert_eq!(working.artifacts.len(), 1);
        assert_eq!(working.artifacts[0].parts.len(), 2);
        apply_artifact(
            &mut working,
            Artifact::new("a", vec![Part::text("new")]),
            false,
            true,
        )
        .expect("ok");
        assert_eq!(
            working.artifacts[0].parts,
            vec![Part::text("new")],
            "a non-append replaces"
        );
    }

    #[test]
    fn a_direct_reply_is_only_allowed_before_anything_else_and_is_remembered() {
        let mut fresh = task(TaskState::Submitted);
        let reply = Message::agent_text("hi");
        apply_reply(&mut fresh, reply.clone()).expect("ok");
        assert_eq!(direct_reply(&fresh), Some(&reply));
        assert_eq!(fresh.status.state, TaskState::Completed);
        let mut started = task(TaskState::Working);
        assert!(apply_reply(&mut started, reply).is_err());
        assert_eq!(direct_reply(&started), None);
    }
}
