//! Streams of a turn's events, from its live broadcast in this process, and the changes between
//! two versions of a task (for followers that read the store).

use std::sync::Arc;

use a2a_protocol_types::{
    Message, StreamResponse, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent,
};
use futures::stream;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use super::live::{LiveTask, SharedEvent};
use crate::handler::EventStream;

/// Which event ends a stream.
type EndsAt = fn(&StreamResponse) -> bool;

/// Ends a send's stream: a direct reply, or a task that finished or waits for input (§11.7).
pub(crate) fn at_settled(event: &StreamResponse) -> bool {
    event.is_final()
}

/// Ends a subscription: a direct reply, or a task that finished. A task waiting for input is
/// followed on, since a follow-up message may continue it (§3.1.6).
pub(crate) fn at_terminal(event: &StreamResponse) -> bool {
    match event {
        StreamResponse::Message(_) => true,
        StreamResponse::Task(task) => task.status.state.is_terminal(),
        StreamResponse::StatusUpdate(update) => update.status.state.is_terminal(),
        StreamResponse::ArtifactUpdate(_) => false,
    }
}

struct Following {
    live: Arc<LiveTask>,
    events: broadcast::Receiver<SharedEvent>,
    ends_at: EndsAt,
}

/// Follows a live task from `events` (taken with its snapshot) until a final event or the end
/// of its last turn. A reader that falls too far behind gets a fresh snapshot and continues.
pub(crate) fn follow_live(
    live: Arc<LiveTask>,
    events: Option<broadcast::Receiver<SharedEvent>>,
) -> EventStream {
    follow_live_until(live, events, at_settled)
}

/// [`follow_live`], ending at the first event `ends_at` picks.
pub(crate) fn follow_live_until(
    live: Arc<LiveTask>,
    events: Option<broadcast::Receiver<SharedEvent>>,
    ends_at: EndsAt,
) -> EventStream {
    let start = events.map(|events| Following {
        live,
        events,
        ends_at,
    });
    Box::pin(stream::unfold(start, |state| async move {
        let mut state = state?;
        match state.events.recv().await {
            Ok(event) => {
                let next = (!(state.ends_at)(&event)).then_some(state);
                // The last holder takes the event; others copy it.
                Some((Arc::unwrap_or_clone(event), next))
            }
            Err(RecvError::Lagged(_)) => {
                let (task, events) = state.live.subscribe().await;
                let event = StreamResponse::Task(task);
                let next = match ((state.ends_at)(&event), events) {
                    (false, Some(events)) => Some(Following {
                        live: state.live,
                        events,
                        ends_at: state.ends_at,
                    }),
                    _ => None,
                };
                Some((event, next))
            }
            Err(RecvError::Closed) => None,
        }
    }))
}

/// Waits until the turn `events` follows settles or ends, and returns its direct reply if it
/// answered with one. For a caller that wants only the outcome: no stream is built and no
/// event is copied.
pub(crate) async fn await_settled(
    events: Option<broadcast::Receiver<SharedEvent>>,
) -> Option<Message> {
    let mut events = events?;
    loop {
        match events.recv().await {
            Ok(event) if event.is_final() => {
                return match &*event {
                    StreamResponse::Message(reply) => Some(reply.clone()),
                    _ => None,
                };
            }
            // A lag only skips events this waiter would not have looked at.
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return None,
        }
    }
}

/// The events that turn `before` into `after`: changed artifacts, then the status.
pub(crate) fn changes(before: &Task, after: &Task) -> Vec<StreamResponse> {
    let mut events = Vec::new();
    for artifact in &after.artifacts {
        let unchanged = before
            .artifacts
            .iter()
            .any(|a| a.artifact_id == artifact.artifact_id && a == artifact);
        if !unchanged {
            events.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: after.id.clone(),
                context_id: after.context_id.clone(),
                artifact: artifact.clone(),
                append: false,
                last_chunk: true,
                metadata: None,
                generation: after.generation,
            }));
        }
    }
    if before.status != after.status {
        events.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: after.id.clone(),
            context_id: after.context_id.clone(),
            status: after.status.clone(),
            metadata: None,
            generation: after.generation,
        }));
    }
    events
}
