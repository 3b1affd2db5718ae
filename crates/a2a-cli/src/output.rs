//! What the commands print: a few aligned lines for people, or the A2A objects themselves as
//! JSON for scripts (`--json`; one object per line for streams).

use std::fmt::Write as _;

use a2a_protocol_types::{
    AgentCard, Artifact, ListTasksResponse, Message, Part, PartContent, SendMessageResponse,
    StreamResponse, Task, TaskState,
};
use serde::Serialize;

use crate::exit::Failure;

/// Where and how results are printed.
#[derive(Clone, Copy)]
pub(crate) struct Output {
    pub(crate) json: bool,
}

impl Output {
    /// Prints `value` as pretty JSON, or as `human` renders it.
    pub(crate) fn show<T: Serialize>(
        self,
        value: &T,
        human: impl FnOnce(&T) -> String,
    ) -> Result<(), Failure> {
        let text = if self.json {
            serde_json::to_string_pretty(value)
                .map_err(|e| Failure::internal(format!("cannot print the answer: {e}")))?
        } else {
            human(value)
        };
        say(text.trim_end());
        Ok(())
    }

    /// Prints one stream event as it arrives: a line of JSON, or a line for people.
    pub(crate) fn event(self, event: &StreamResponse) -> Result<(), Failure> {
        let text = if self.json {
            serde_json::to_string(event)
                .map_err(|e| Failure::internal(format!("cannot print an event: {e}")))?
        } else {
            event_line(event)
        };
        say(&text);
        Ok(())
    }

    /// Prints a note for people on stderr; as a JSON object there under `--json`.
    pub(crate) fn note(self, human: &str, json: serde_json::Value) {
        if self.json {
            eprintln!("{json}");
        } else {
            eprintln!("{human}");
        }
    }
}

/// Prints a line to stdout. A closed stdout (a reader that went away) is not worth failing
/// over, least of all for a server.
pub(crate) fn say(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
}

/// `completed`, `input-required`: the state as people write it.
pub(crate) fn state_name(state: TaskState) -> String {
    state
        .as_str()
        .trim_start_matches("TASK_STATE_")
        .to_lowercase()
        .replace('_', "-")
}

fn part_text(part: &Part) -> String {
    match &part.content {
        PartContent::Text(text) => text.clone(),
        PartContent::Raw(bytes) => format!(
            "<{} bytes{}>",
            bytes.len(),
            part.media_type
                .as_deref()
                .map(|t| format!(" of {t}"))
                .unwrap_or_default()
        ),
        PartContent::Url(url) => url.clone(),
        PartContent::Data(data) => data.to_string(),
    }
}

fn parts_text(parts: &[Part]) -> String {
    parts.iter().map(part_text).collect::<Vec<_>>().join(" ")
}

pub(crate) fn message_text(message: &Message) -> String {
    parts_text(&message.parts)
}

/// A send's answer: the task, or the agent's direct reply.
pub(crate) fn send_response(response: &SendMessageResponse) -> String {
    match response {
        SendMessageResponse::Task(task) => task_text(task),
        SendMessageResponse::Message(message) => format!("reply     {}", message_text(message)),
    }
}

/// A task, one fact a line.
pub(crate) fn task_text(task: &Task) -> String {
    let mut text = format!(
        "task      {}\ncontext   {}\nstate     {}\n",
        task.id,
        task.context_id,
        state_name(task.status.state)
    );
    text.push_str(&outcome_lines(task));
    text
}

/// A task's artifacts and its status message, a line each.
fn outcome_lines(task: &Task) -> String {
    let mut text = String::new();
    for artifact in &task.artifacts {
        let _ = writeln!(text, "{}", artifact_line(artifact, false));
    }
    if let Some(message) = &task.status.message {
        let _ = writeln!(text, "message   {}", message_text(message));
    }
    text
}

fn artifact_line(artifact: &Artifact, more: bool) -> String {
    let name = artifact
        .name
        .as_deref()
        .unwrap_or(artifact.artifact_id.as_str());
    format!(
        "artifact  {name}{}: {}",
        if more { " (more)" } else { "" },
        parts_text(&artifact.parts)
    )
}

/// One stream event, as one line; a task, as a stream may answer with a finished one, also
/// with its artifacts and status message, a line each.
pub(crate) fn event_line(event: &StreamResponse) -> String {
    match event {
        StreamResponse::Task(task) => {
            let head = format!(
                "task      {} ({}) in context {}",
                task.id,
                state_name(task.status.state),
                task.context_id
            );
            let outcome = outcome_lines(task);
            if outcome.is_empty() {
                head
            } else {
                format!("{head}\n{}", outcome.trim_end())
            }
        }
        StreamResponse::Message(message) => format!("reply     {}", message_text(message)),
        StreamResponse::StatusUpdate(update) => {
            let mut line = format!("status    {}", state_name(update.status.state));
            if let Some(message) = &update.status.message {
                let _ = write!(line, ": {}", message_text(message));
            }
            line
        }
        StreamResponse::ArtifactUpdate(update) => artifact_line(&update.artifact, update.append),
    }
}

/// The line naming the task a stream is about, for a stream whose first event does not (a
/// status or artifact update first, as some agents send): `None` when the event names it.
pub(crate) fn stream_opening(first: &StreamResponse) -> Option<String> {
    let (task, context) = match first {
        StreamResponse::StatusUpdate(update) => (&update.task_id, &update.context_id),
        StreamResponse::ArtifactUpdate(update) => (&update.task_id, &update.context_id),
        StreamResponse::Task(_) | StreamResponse::Message(_) => return None,
    };
    Some(format!("task      {task} in context {context}"))
}

/// A page of tasks as a table, with how to get the next page.
pub(crate) fn task_table(page: &ListTasksResponse) -> String {
    let rows: Vec<[String; 4]> = page
        .tasks
        .iter()
        .map(|task| {
            let updated = task.status.timestamp.map(|t| t.to_string());
            [
                task.id.to_string(),
                state_name(task.status.state),
                updated.unwrap_or_default(),
                task.context_id.to_string(),
            ]
        })
        .collect();
    // Each column as wide as its widest cell: ids and timestamps vary in length (a peer may
    // write nanoseconds), and a fixed width let a long one push the next column out of line.
    let header = ["TASK", "STATE", "UPDATED", "CONTEXT"].map(str::to_owned);
    let width = |column: usize| {
        std::iter::once(&header)
            .chain(&rows)
            .map(|row| row[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (id, state, updated) = (width(0), width(1), width(2));
    let mut text = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let _ = writeln!(
            text,
            "{:<id$} {:<state$} {:<updated$} {}",
            row[0], row[1], row[2], row[3]
        );
    }
    let _ = write!(text, "{} of {} tasks", page.tasks.len(), page.total_size);
    if !page.next_page_token.is_empty() {
        let _ = write!(text, "; next page: --page-token {}", page.next_page_token);
    }
    text
}

/// What a card says, for people deciding how to talk to the agent.
pub(crate) fn card_text(card: &AgentCard) -> String {
    let yes = |flag: Option<bool>| if flag == Some(true) { "yes" } else { "no" };
    let mut text = format!("{} {}\n{}\n\n", card.name, card.version, card.description);
    for interface in &card.supported_interfaces {
        let _ = writeln!(
            text,
            "interface {:<10} {}",
            interface.protocol_binding, interface.url
        );
    }
    let _ = writeln!(
        text,
        "streaming {}\npush      {}\nkeys      {}",
        yes(card.capabilities.streaming),
        yes(card.capabilities.push_notifications),
        if card.supports_extension(a2a_protocol_types::idempotency::IDEMPOTENCY_EXTENSION_URI) {
            "honoured (a keyed send is safe to retry)"
        } else {
            "not advertised (a retried send may run twice)"
        }
    );
    for extension in card.capabilities.extensions.iter().flatten() {
        let _ = writeln!(text, "extension {}", extension.uri);
    }
    for skill in &card.skills {
        let _ = writeln!(text, "skill     {}: {}", skill.name, skill.description);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol_types::TaskStatus;

    #[test]
    fn states_read_as_people_write_them() {
        assert_eq!(state_name(TaskState::InputRequired), "input-required");
        assert_eq!(state_name(TaskState::Completed), "completed");
    }

    #[test]
    fn a_task_shows_its_ids_state_and_artifacts() {
        let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Completed));
        task.artifacts.push(
            a2a_protocol_types::Artifact::new("a-1", vec![Part::text("hi")]).with_name("echo"),
        );
        let text = task_text(&task);
        assert!(text.contains("task      t-1"), "{text}");
        assert!(text.contains("state     completed"), "{text}");
        assert!(text.contains("artifact  echo: hi"), "{text}");
    }

    /// A stream answered with a finished task (as some agents answer) shows what the task
    /// produced, not only its id.
    #[test]
    fn a_task_event_shows_its_artifacts_and_message() {
        let mut status = TaskStatus::new(TaskState::Completed);
        status.message = Some(Message::agent_text("all done"));
        let mut task = Task::new("t-1", "c-1", status);
        task.artifacts.push(
            a2a_protocol_types::Artifact::new("a-1", vec![Part::text("hi")]).with_name("echo"),
        );
        let text = event_line(&StreamResponse::Task(task));
        assert_eq!(
            text,
            "task      t-1 (completed) in context c-1\nartifact  echo: hi\nmessage   all done"
        );
    }

    /// A stream that opens with an update, not the task, still says which task it is about.
    #[test]
    fn a_stream_opening_with_an_update_names_its_task() {
        let update = StreamResponse::StatusUpdate(a2a_protocol_types::TaskStatusUpdateEvent {
            task_id: "t-9".into(),
            context_id: "c-9".into(),
            status: TaskStatus::new(TaskState::Working),
            metadata: None,
            generation: 0,
        });
        assert_eq!(
            stream_opening(&update).as_deref(),
            Some("task      t-9 in context c-9")
        );
        let task = Task::new("t-9", "c-9", TaskStatus::new(TaskState::Submitted));
        assert_eq!(stream_opening(&StreamResponse::Task(task)), None);
    }

    /// Columns line up whatever the length of the timestamps and ids in them.
    #[test]
    fn the_task_table_lines_up_with_long_timestamps() {
        let stamped = |id: &str, stamp: &str| {
            let mut status = TaskStatus::new(TaskState::Working);
            status.timestamp = Some(stamp.parse().expect("a timestamp"));
            Task::new(id, "c-1", status)
        };
        let page = ListTasksResponse {
            tasks: vec![
                stamped("t-1", "2026-12-07T10:00:00Z"),
                stamped(
                    "a-much-longer-task-id-0123456789-0123456789",
                    "2026-12-07T10:00:00.123456789Z",
                ),
            ],
            total_size: 2,
            ..Default::default()
        };
        let text = task_table(&page);
        let columns: Vec<Vec<usize>> = text
            .lines()
            .take(3)
            .map(|line| {
                let cells = [
                    "t-1", "a-much", "TASK", "working", "STATE", "2026", "UPDATED", "c-1",
                    "CONTEXT",
                ];
                let mut starts: Vec<usize> =
                    cells.iter().filter_map(|cell| line.find(cell)).collect();
                starts.sort_unstable();
                starts.dedup();
                starts
            })
            .collect();
        assert!(columns.windows(2).all(|pair| pair[0] == pair[1]), "{text}");
    }
}
