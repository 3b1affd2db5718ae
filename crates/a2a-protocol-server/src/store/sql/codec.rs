//! How a task is laid out in rows: the head (the task without its history) as JSON, each
//! history message as JSON of its own, and the events of one write as one row (a JSON array
//! when there are several).

use a2a_protocol_types::{
    Artifact, ContextId, Message, Metadata, StreamResponse, Task, TaskId, TaskStatus,
};
use serde::Serialize;

use crate::store::StoreError;

/// The task as its head row holds it: everything but the history (its own rows) and the
/// generation (its own column).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Head<'a> {
    id: &'a TaskId,
    #[serde(skip_serializing_if = "ContextId::is_empty")]
    context_id: &'a ContextId,
    status: &'a TaskStatus,
    #[serde(skip_serializing_if = "<[Artifact]>::is_empty")]
    artifacts: &'a [Artifact],
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: &'a Option<Metadata>,
}

fn corrupt(what: &str, error: serde_json::Error) -> StoreError {
    StoreError::Corrupt(format!("{what}: {error}"))
}

pub(crate) fn encode_head(task: &Task) -> Result<String, StoreError> {
    // Destructured in full, so a field added to `Task` cannot be left out of the row.
    let Task {
        id,
        context_id,
        status,
        artifacts,
        history: _,
        metadata,
        generation: _,
    } = task;
    serde_json::to_string(&Head {
        id,
        context_id,
        status,
        artifacts,
        metadata,
    })
    .map_err(|e| corrupt("a task does not serialize", e))
}

/// The task of a head row, at `generation`, with no history yet.
pub(crate) fn decode_head(body: &str, generation: i64) -> Result<Task, StoreError> {
    let mut task: Task =
        serde_json::from_str(body).map_err(|e| corrupt("a stored task does not parse", e))?;
    task.history.clear();
    task.generation = u64::try_from(generation).unwrap_or(0);
    Ok(task)
}

pub(crate) fn encode_message(message: &Message) -> Result<String, StoreError> {
    serde_json::to_string(message).map_err(|e| corrupt("a message does not serialize", e))
}

pub(crate) fn decode_message(body: &str) -> Result<Message, StoreError> {
    serde_json::from_str(body).map_err(|e| corrupt("a stored message does not parse", e))
}

fn encode_event(event: &StreamResponse) -> Result<String, StoreError> {
    serde_json::to_string(event).map_err(|e| corrupt("an event does not serialize", e))
}

/// Each event of `write` with its generation, encoded.
pub(crate) fn encode_events(
    write: &crate::store::TaskWrite<'_>,
) -> Result<Vec<(i64, String)>, StoreError> {
    write
        .events
        .iter()
        .enumerate()
        .map(|(i, event)| {
            let generation = i64::try_from(write.event_generation(i)).unwrap_or(i64::MAX);
            Ok((generation, encode_event(event)?))
        })
        .collect()
}

/// A write's task columns and new messages, encoded and owned: what a write waiting in a
/// group writer's queue carries (both SQL stores have one).
pub(crate) struct EncodedTask {
    pub(crate) tenant: String,
    pub(crate) id: String,
    pub(crate) context_id: String,
    pub(crate) state: &'static str,
    pub(crate) status_millis: i64,
    pub(crate) terminal: bool,
    pub(crate) head: String,
    pub(crate) generation: i64,
    pub(crate) owner: Option<String>,
    pub(crate) recoveries: Option<i32>,
    /// (place in the history, body) of each new message.
    pub(crate) messages: Vec<(i64, String)>,
}

impl EncodedTask {
    /// `write`'s task as stored under `tenant` (the store's, which may not be the request's).
    pub(crate) fn new(
        tenant: &str,
        write: &crate::store::TaskWrite<'_>,
    ) -> Result<Self, StoreError> {
        let task = &**write.task;
        let first_new = task.history.len().saturating_sub(write.new_messages);
        let messages = task.history[first_new..]
            .iter()
            .enumerate()
            .map(|(i, message)| {
                let seq = i64::try_from(first_new + i).unwrap_or(i64::MAX);
                Ok((seq, encode_message(message)?))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Self {
            tenant: tenant.to_owned(),
            id: task.id.to_string(),
            context_id: task.context_id.to_string(),
            state: task.status.state.as_str(),
            status_millis: super::status_millis(task),
            terminal: task.status.state.is_terminal(),
            head: encode_head(task)?,
            generation: i64::try_from(task.generation).unwrap_or(i64::MAX),
            owner: write.owner.map(str::to_owned),
            recoveries: write
                .recoveries
                .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
            messages,
        })
    }
}

pub(crate) fn encode_push_config(
    config: &a2a_protocol_types::push::TaskPushNotificationConfig,
) -> Result<String, StoreError> {
    serde_json::to_string(config).map_err(|e| corrupt("a push config does not serialize", e))
}

pub(crate) fn decode_push_config(
    body: &str,
) -> Result<a2a_protocol_types::push::TaskPushNotificationConfig, StoreError> {
    serde_json::from_str(body).map_err(|e| StoreError::Corrupt(format!("push config: {e}")))
}

/// The rows `events` (each with its generation, oldest first) take in `a2a_task_events`: one
/// row for the whole write, under the last event's generation, whose body is the JSON array of
/// the events; a single event is a row of its own, as before. A row costs an index entry per
/// index and a tuple, so a fast turn's three events cost one. Generations that do not follow
/// one another (no write makes them) keep a row each, so a row's generation always tells
/// every event's.
pub(crate) fn event_rows(events: &[(i64, String)]) -> Vec<(i64, String)> {
    let consecutive = events
        .windows(2)
        .all(|w| w[0].0.checked_add(1) == Some(w[1].0));
    match events {
        [_, .., (last, _)] if consecutive => {
            let bodies: Vec<&str> = events.iter().map(|(_, body)| body.as_str()).collect();
            vec![(*last, format!("[{}]", bodies.join(",")))]
        }
        _ => events.to_vec(),
    }
}

/// The events of an `a2a_task_events` row at `generation` (see [`event_rows`]) that come
/// after generation `after`, oldest first. Reads rows of one event as earlier versions wrote
/// them too.
pub(crate) fn decode_event_row(
    generation: i64,
    body: &str,
    after: u64,
) -> Result<Vec<StreamResponse>, StoreError> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    if !body.trim_start().starts_with('[') {
        return Ok(if generation > after {
            vec![decode_event_at(body, generation)?]
        } else {
            Vec::new()
        });
    }
    let events: Vec<StreamResponse> = serde_json::from_str(body)
        .map_err(|e| corrupt("a stored row of events does not parse", e))?;
    let first = generation.saturating_sub(i64::try_from(events.len()).unwrap_or(i64::MAX) - 1);
    Ok((first..)
        .zip(events)
        .filter(|(event_generation, _)| *event_generation > after)
        .map(|(event_generation, mut event)| {
            event.set_generation(u64::try_from(event_generation).unwrap_or(0));
            event
        })
        .collect())
}

/// A stored event, carrying the generation it was stored at: the JSON an event is stored as
/// is the v1.0 wire's, which has no generation.
pub(crate) fn decode_event_at(body: &str, generation: i64) -> Result<StreamResponse, StoreError> {
    let mut event = decode_event(body)?;
    event.set_generation(u64::try_from(generation).unwrap_or(0));
    Ok(event)
}

fn decode_event(body: &str) -> Result<StreamResponse, StoreError> {
    serde_json::from_str(body).map_err(|e| corrupt("a stored event does not parse", e))
}

#[cfg(test)]
mod tests {
    use a2a_protocol_types::{Part, TaskState};

    use super::*;

    #[test]
    fn a_head_is_the_task_without_history_and_reads_back_at_its_generation() {
        let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
        task.history.push(Message::user_text("hi"));
        task.artifacts
            .push(Artifact::new("a", vec![Part::text("x")]));
        task.generation = 9;
        let body = encode_head(&task).expect("encodes");
        assert!(
            !body.contains("history") && !body.contains("generation"),
            "{body}"
        );
        let back = decode_head(&body, 9).expect("decodes");
        let mut expected = task;
        expected.history.clear();
        assert_eq!(back, expected);
    }

    fn status(state: TaskState, generation: u64) -> StreamResponse {
        StreamResponse::StatusUpdate(a2a_protocol_types::TaskStatusUpdateEvent {
            task_id: "t-1".into(),
            context_id: "c-1".into(),
            status: TaskStatus::new(state),
            metadata: None,
            generation,
        })
    }

    #[test]
    fn a_writes_events_take_one_row_and_read_back_after_any_generation() {
        let events: Vec<StreamResponse> = [
            (TaskState::Working, 4),
            (TaskState::Working, 5),
            (TaskState::Completed, 6),
        ]
        .into_iter()
        .map(|(state, generation)| status(state, generation))
        .collect();
        let encoded: Vec<(i64, String)> = (4..)
            .zip(&events)
            .map(|(generation, event)| (generation, encode_event(event).unwrap()))
            .collect();
        let rows = event_rows(&encoded);
        assert_eq!(rows.len(), 1, "{rows:?}");
        let (generation, body) = &rows[0];
        assert_eq!(*generation, 6);
        for after in 0..8u64 {
            let expected: Vec<&StreamResponse> = (4..)
                .zip(&events)
                .filter(|(g, _)| *g > after)
                .map(|(_, e)| e)
                .collect();
            let back = decode_event_row(*generation, body, after).unwrap();
            assert_eq!(back.iter().collect::<Vec<_>>(), expected, "after {after}");
        }
    }

    #[test]
    fn single_events_and_rows_of_earlier_versions_read_as_before() {
        let event = status(TaskState::Working, 3);
        let one = vec![(3, encode_event(&event).unwrap())];
        assert_eq!(event_rows(&one), one, "one event keeps its own row");
        // An earlier version wrote every event as a row of its own, as one event is now.
        assert_eq!(decode_event_row(3, &one[0].1, 2).unwrap(), [event]);
        assert!(decode_event_row(3, &one[0].1, 3).unwrap().is_empty());
        // Generations that do not follow one another keep a row each.
        let gaps = vec![(3, one[0].1.clone()), (5, one[0].1.clone())];
        assert_eq!(event_rows(&gaps), gaps);
        assert!(event_rows(&[]).is_empty());
        assert!(matches!(
            decode_event_row(4, "[{\"nonsense\": 1}]", 0),
            Err(StoreError::Corrupt(_))
        ));
    }
}
