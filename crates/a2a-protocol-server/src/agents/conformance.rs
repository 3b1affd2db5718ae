//! The conformance agent: behaves as the A2A TCK's scenarios describe, chosen by the prefix of
//! the message id (`tck-complete-task`, `tck-stream-001`, ...).

use std::time::Duration;

use a2a_protocol_types::{A2aError, AgentCard, AgentSkill, Artifact, Part, TaskState};
use async_trait::async_trait;
use serde_json::json;

use crate::executor::{AgentExecutor, EventSink, RequestContext};

/// What the agent does for one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    CompleteTask,
    ArtifactText,
    ArtifactFile,
    ArtifactFileUrl,
    ArtifactData,
    MessageResponse,
    InputRequired,
    RejectTask,
    /// Working, one text artifact, completed.
    StreamText(&'static str),
    StreamCompleteOnly,
    StreamArtifactFile,
    StreamArtifactChunked,
    LongRunning,
}

/// Prefixes, longest first where one extends another.
const SCENARIOS: &[(&str, Scenario)] = &[
    ("tck-complete-task", Scenario::CompleteTask),
    ("tck-artifact-text", Scenario::ArtifactText),
    ("tck-artifact-file-url", Scenario::ArtifactFileUrl),
    ("tck-artifact-file", Scenario::ArtifactFile),
    ("tck-artifact-data", Scenario::ArtifactData),
    ("tck-message-response", Scenario::MessageResponse),
    ("tck-input-required", Scenario::InputRequired),
    ("tck-reject-task", Scenario::RejectTask),
    (
        "tck-stream-001",
        Scenario::StreamText("Stream hello from TCK"),
    ),
    ("tck-stream-002", Scenario::StreamCompleteOnly),
    (
        "tck-stream-003",
        Scenario::StreamText("Stream task lifecycle"),
    ),
    (
        "tck-stream-ordering-001",
        Scenario::StreamText("Ordered output"),
    ),
    (
        "tck-stream-artifact-text",
        Scenario::StreamText("Streamed text content"),
    ),
    ("tck-stream-artifact-file", Scenario::StreamArtifactFile),
    (
        "tck-stream-artifact-chunked",
        Scenario::StreamArtifactChunked,
    ),
    ("test-resubscribe-message-id", Scenario::LongRunning),
];

fn scenario(message_id: &str) -> Scenario {
    SCENARIOS
        .iter()
        .find(|(prefix, _)| message_id.starts_with(prefix))
        .map_or(Scenario::CompleteTask, |(_, s)| *s)
}

/// The TCK's system under test. Unknown prefixes complete the task like `tck-complete-task`.
///
/// ```
/// use a2a_protocol_server::agents::ConformanceAgent;
/// use a2a_protocol_server::{CallContext, RequestHandler};
/// use a2a_protocol_types::{Message, SendMessageRequest, SendMessageResponse, TaskState};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
/// let handler = RequestHandler::builder(ConformanceAgent::new()).build();
/// let mut message = Message::user_text("please");
/// message.id = "tck-reject-task-001".into(); // The prefix picks the scenario.
/// let SendMessageResponse::Task(task) =
///     handler.send_message(SendMessageRequest::new(message), &CallContext::default()).await?
/// else {
///     panic!("a task");
/// };
/// assert_eq!(task.status.state, TaskState::Rejected);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ConformanceAgent {
    streaming_timeout: Duration,
}

impl Default for ConformanceAgent {
    fn default() -> Self {
        Self {
            streaming_timeout: Duration::from_secs(5),
        }
    }
}

impl ConformanceAgent {
    /// A conformance agent whose long-running scenario lasts twice the TCK's default
    /// streaming timeout (5 s).
    ///
    /// ```
    /// use a2a_protocol_server::agents::ConformanceAgent;
    /// use a2a_protocol_server::RequestHandler;
    ///
    /// let handler = RequestHandler::builder(ConformanceAgent::new())
    ///     .with_agent_card(ConformanceAgent::card())
    ///     .build();
    /// assert!(handler.agent_card().capabilities.streaming == Some(true));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the streaming timeout the long-running scenario outlasts twice.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::agents::ConformanceAgent;
    ///
    /// let agent = ConformanceAgent::new().with_streaming_timeout(Duration::from_secs(1));
    /// # let _ = agent;
    /// ```
    pub fn with_streaming_timeout(mut self, timeout: Duration) -> Self {
        self.streaming_timeout = timeout;
        self
    }

    /// A card describing this agent.
    ///
    /// ```
    /// use a2a_protocol_server::agents::ConformanceAgent;
    ///
    /// assert!(!ConformanceAgent::card().skills.is_empty());
    /// ```
    pub fn card() -> AgentCard {
        let mut card = AgentCard::new(
            "a2a-rust conformance agent",
            "Behaves as the A2A TCK scenarios describe, chosen by the messageId prefix.",
            env!("CARGO_PKG_VERSION"),
        )
        .with_skill(AgentSkill::new(
            "tck",
            "TCK scenarios",
            "Completes, fails, streams or asks for input as each TCK scenario requires.",
            vec!["tck".into(), "conformance".into()],
        ));
        card.default_input_modes = vec!["text/plain".into(), "application/json".into()];
        card.default_output_modes = vec!["text/plain".into(), "application/json".into()];
        card
    }
}

fn text_artifact(id: &str, text: &str) -> Artifact {
    Artifact::new(id, vec![Part::text(text)])
}

fn file_artifact() -> Artifact {
    Artifact::new(
        "file-artifact",
        vec![
            Part::raw(b"Generated file content".to_vec())
                .with_filename("output.txt")
                .with_media_type("text/plain"),
        ],
    )
}

#[async_trait]
impl AgentExecutor for ConformanceAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        let complete = || async { events.status(TaskState::Completed, None).await };
        match scenario(ctx.message.id.as_str()) {
            Scenario::CompleteTask => {
                events
                    .complete(Some(events.agent_message("Hello from TCK")))
                    .await
            }
            Scenario::ArtifactText => {
                events
                    .artifact(text_artifact("text-artifact", "Generated text content"))
                    .await?;
                complete().await
            }
            Scenario::ArtifactFile => {
                events.artifact(file_artifact()).await?;
                complete().await
            }
            Scenario::ArtifactFileUrl => {
                let part = Part::url("https://example.com/output.txt")
                    .with_filename("output.txt")
                    .with_media_type("text/plain");
                events
                    .artifact(Artifact::new("file-url-artifact", vec![part]))
                    .await?;
                complete().await
            }
            Scenario::ArtifactData => {
                let part = Part::data(json!({"key": "value", "count": 42}));
                events
                    .artifact(Artifact::new("data-artifact", vec![part]))
                    .await?;
                complete().await
            }
            Scenario::MessageResponse => {
                events
                    .reply(events.agent_message("Direct message response"))
                    .await
            }
            Scenario::InputRequired => events.require_input("Please provide more input").await,
            Scenario::RejectTask => events.reject("rejected").await,
            Scenario::StreamText(text) => {
                events.working().await?;
                events
                    .artifact(text_artifact("stream-artifact", text))
                    .await?;
                complete().await
            }
            Scenario::StreamCompleteOnly => complete().await,
            Scenario::StreamArtifactFile => {
                events.working().await?;
                events.artifact(file_artifact()).await?;
                complete().await
            }
            Scenario::StreamArtifactChunked => {
                events.working().await?;
                events
                    .artifact_chunk(text_artifact("chunked-artifact", "chunk-1 "), false)
                    .await?;
                events
                    .artifact_chunk(text_artifact("chunked-artifact", "chunk-2"), true)
                    .await?;
                complete().await
            }
            Scenario::LongRunning => {
                events.working().await?;
                tokio::select! {
                    () = tokio::time::sleep(self.streaming_timeout * 2) => {}
                    () = ctx.cancellation.cancelled() => return Ok(()),
                }
                complete().await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longer_prefixes_win_over_the_prefixes_they_extend() {
        assert_eq!(
            scenario("tck-artifact-file-url-1"),
            Scenario::ArtifactFileUrl
        );
        assert_eq!(scenario("tck-artifact-file-1"), Scenario::ArtifactFile);
        assert_eq!(
            scenario("tck-stream-artifact-file-1"),
            Scenario::StreamArtifactFile
        );
        assert_eq!(
            scenario("tck-stream-artifact-chunked-9"),
            Scenario::StreamArtifactChunked
        );
        assert_eq!(scenario("anything-else"), Scenario::CompleteTask);
    }
}
