//! What a task costs the in-memory stores, in bytes: an estimate good enough to bound memory
//! by, counting the content clients send (text, files, JSON) and a fixed overhead per piece.

use a2a_protocol_types::{Artifact, Message, Metadata, Part, PartContent, Task};
use serde_json::Value;

/// Per message, part, artifact or JSON node: the structs and allocations around the content.
const OVERHEAD: usize = 64;

/// The bytes `task` holds, roughly.
pub(crate) fn task_bytes(task: &Task) -> usize {
    head_bytes(task) + appended_bytes(task, task.history.len())
}

/// The bytes of `task` without its history.
pub(crate) fn head_bytes(task: &Task) -> usize {
    OVERHEAD
        + task.id.as_str().len()
        + task.context_id.as_str().len()
        + task.status.message.as_ref().map_or(0, message_bytes)
        + task.artifacts.iter().map(artifact_bytes).sum::<usize>()
        + metadata_bytes(task.metadata.as_ref())
}

/// The bytes of the last `count` messages of `task`'s history.
pub(crate) fn appended_bytes(task: &Task, count: usize) -> usize {
    let from = task.history.len().saturating_sub(count);
    task.history[from..].iter().map(message_bytes).sum()
}

fn message_bytes(message: &Message) -> usize {
    OVERHEAD
        + message.id.as_str().len()
        + message.parts.iter().map(part_bytes).sum::<usize>()
        + metadata_bytes(message.metadata.as_ref())
        + message
            .extensions
            .iter()
            .flatten()
            .map(String::len)
            .sum::<usize>()
}

fn artifact_bytes(artifact: &Artifact) -> usize {
    OVERHEAD
        + artifact.artifact_id.as_str().len()
        + artifact.name.as_ref().map_or(0, String::len)
        + artifact.description.as_ref().map_or(0, String::len)
        + artifact.parts.iter().map(part_bytes).sum::<usize>()
        + metadata_bytes(artifact.metadata.as_ref())
}

fn part_bytes(part: &Part) -> usize {
    let content = match &part.content {
        PartContent::Text(text) | PartContent::Url(text) => text.len(),
        PartContent::Raw(bytes) => bytes.len(),
        PartContent::Data(value) => value_bytes(value),
    };
    OVERHEAD
        + content
        + part.filename.as_ref().map_or(0, String::len)
        + part.media_type.as_ref().map_or(0, String::len)
        + metadata_bytes(part.metadata.as_ref())
}

fn metadata_bytes(metadata: Option<&Metadata>) -> usize {
    metadata.map_or(0, |map| {
        map.iter()
            .map(|(key, value)| key.len() + value_bytes(value))
            .sum()
    })
}

fn value_bytes(value: &Value) -> usize {
    OVERHEAD
        + match value {
            Value::String(text) => text.len(),
            Value::Array(items) => items.iter().map(value_bytes).sum(),
            Value::Object(map) => map.iter().map(|(k, v)| k.len() + value_bytes(v)).sum(),
            Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        }
}

/// The estimated size of a push notification config, held with its task.
pub(crate) fn push_config_bytes(
    config: &a2a_protocol_types::push::TaskPushNotificationConfig,
) -> usize {
    OVERHEAD
        + config.tenant.len()
        + config.id.len()
        + config.task_id.as_str().len()
        + config.url.len()
        + config.token.as_ref().map_or(0, String::len)
        + config.authentication.as_ref().map_or(0, |auth| {
            auth.scheme.len() + auth.credentials.as_ref().map_or(0, String::len)
        })
}

#[cfg(test)]
mod tests {
    use a2a_protocol_types::{TaskState, TaskStatus};

    use super::*;

    #[test]
    fn content_dominates_the_estimate() {
        let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
        let empty = task_bytes(&task);
        task.history.push(Message::user_text("x".repeat(1_000_000)));
        let with_text = task_bytes(&task);
        assert!(with_text - empty >= 1_000_000, "{empty} {with_text}");
        assert!(with_text - empty < 1_001_000, "overhead stays small");
        task.artifacts.push(Artifact::new(
            "a-1",
            vec![Part::data(serde_json::json!({
                "rows": vec!["y".repeat(1_000); 100]
            }))],
        ));
        assert!(task_bytes(&task) - with_text >= 100_000);
        assert_eq!(
            task_bytes(&task),
            head_bytes(&task) + appended_bytes(&task, 1),
            "the head and the history make the whole"
        );
    }
}
