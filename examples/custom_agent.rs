//! Your own agent, served on the embedded SQLite store.
//!
//! `cargo run -p a2a-examples --example custom_agent` serves it on a free port, asks it one
//! question with the A2A client and exits. `-- --serve 127.0.0.1:8080` keeps serving until
//! Ctrl-C, so you can talk to it with `a2a send http://127.0.0.1:8080 "count these words"`.

use std::sync::Arc;

use a2a_protocol_client::ClientBuilder;
use a2a_protocol_server::store::SqliteTaskStore;
use a2a_protocol_server::{A2aServer, AgentExecutor, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::{
    A2aError, AgentCard, AgentSkill, Artifact, Message, Part, SendMessageRequest,
    SendMessageResponse,
};
use async_trait::async_trait;

/// Counts the words of each message: the task goes working, gains an artifact with the count,
/// and completes with a sentence saying it.
struct WordCounter;

#[async_trait]
impl AgentExecutor for WordCounter {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        events.working().await?;
        let text = ctx.message.text();
        if text.trim().is_empty() {
            // A rejection is an answer, not an error: the task ends REJECTED with this text.
            return events.reject("send some text to count").await;
        }
        let words = text.split_whitespace().count();
        events
            .artifact(Artifact::new(
                "count",
                vec![Part::data(serde_json::json!({ "words": words }))],
            ))
            .await?;
        let answer = format!("{words} words");
        events.complete(Some(events.agent_message(answer))).await
    }
}

fn card() -> AgentCard {
    AgentCard::new("Word counter", "Counts the words of a message.", "1.0.0").with_skill(
        AgentSkill::new(
            "count",
            "Count words",
            "Answers with the number of words it is sent.",
            vec!["text".into()],
        ),
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_env_filter("warn").init();
    let args: Vec<String> = std::env::args().collect();
    let serve_at = args
        .iter()
        .position(|a| a == "--serve")
        .and_then(|at| args.get(at + 1).cloned());

    // Tasks and idempotency keys survive restarts in this file.
    let dir = std::env::temp_dir().join(format!("a2a-custom-agent-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let store = Arc::new(
        SqliteTaskStore::open(&format!("sqlite://{}", dir.join("tasks.db").display())).await?,
    );
    let handler = RequestHandler::builder(WordCounter)
        .with_agent_card(card())
        .with_store(store)
        .build();
    let server = A2aServer::new(handler);

    let listener =
        tokio::net::TcpListener::bind(serve_at.as_deref().unwrap_or("127.0.0.1:0")).await?;
    let base = format!("http://{}", listener.local_addr()?);
    if serve_at.is_some() {
        println!("serving the word counter at {base} (Ctrl-C stops it)");
        server
            .serve(listener, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        return Ok(());
    }

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(listener, async {
        let _ = stopped.await;
    }));
    // The client reads the agent's card, so it knows the agent honours idempotency keys.
    let client = ClientBuilder::discover(&base).await?.build()?;
    let request = SendMessageRequest::new(Message::user_text("the quick brown fox jumps"));
    match client.send_message(request).await? {
        SendMessageResponse::Task(task) => {
            let answer = task
                .status
                .message
                .as_ref()
                .map(Message::text)
                .unwrap_or_default();
            println!("task {} is {:?}: {answer}", task.id, task.status.state);
            assert_eq!(answer, "5 words");
        }
        SendMessageResponse::Message(message) => println!("the agent replied: {}", message.text()),
    }
    stop.send(()).ok();
    serving.await??;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
