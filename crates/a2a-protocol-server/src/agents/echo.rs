//! The echo agent: answers with the text it was sent.

use std::time::Duration;

use a2a_protocol_types::{A2aError, AgentCard, AgentSkill, Artifact, Part};
use async_trait::async_trait;

use crate::executor::{AgentExecutor, EventSink, RequestContext};

/// Echoes the text of each message: the task goes working, gains an artifact holding the text,
/// and completes with the text as its message. In slow mode it works for a while first, and
/// stops early if the task is canceled.
#[derive(Debug, Clone, Default)]
pub struct EchoAgent {
    delay: Duration,
}

impl EchoAgent {
    /// An echo agent that answers at once.
    pub fn new() -> Self {
        Self::default()
    }

    /// An echo agent that works for `delay` before answering.
    pub fn slow(delay: Duration) -> Self {
        Self { delay }
    }

    /// A card describing this agent.
    pub fn card() -> AgentCard {
        AgentCard::new(
            "Echo agent",
            "Answers every message with its own text.",
            env!("CARGO_PKG_VERSION"),
        )
        .with_skill(AgentSkill::new(
            "echo",
            "Echo",
            "Returns the text it is sent.",
            vec!["echo".into(), "test".into()],
        ))
    }
}

#[async_trait]
impl AgentExecutor for EchoAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        events.working().await?;
        if !self.delay.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(self.delay) => {}
                () = ctx.cancellation.cancelled() => return Ok(()),
            }
        }
        let text = ctx.message.text();
        events
            .artifact(Artifact::new("echo", vec![Part::text(text.clone())]).with_name("echo"))
            .await?;
        events.complete(Some(events.agent_message(text))).await
    }
}
