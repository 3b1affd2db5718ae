//! The conformance agent answers every scenario of the TCK feature files as they say: one test
//! per scenario, each over the three bindings.

mod common;

use std::time::Duration;

use a2a_protocol_server::RequestHandler;
use a2a_protocol_server::agents::ConformanceAgent;
use common::*;
use serde_json::{Value, json};

async fn server() -> TestServer {
    serve_handler(
        RequestHandler::builder(
            ConformanceAgent::new().with_streaming_timeout(Duration::from_millis(200)),
        )
        .with_agent_card(ConformanceAgent::card())
        .build(),
    )
    .await
}

/// Sends a blocking message with `message_id` on each binding; returns each result.
async fn unary(message_id: &str) -> Vec<Value> {
    let server = server().await;
    let mut results = Vec::new();
    for binding in BINDINGS {
        let id = format!("{message_id}-{binding:?}");
        results.push(
            call(binding, &server.base, "SendMessage", send_params(&id, "go"))
                .await
                .expect("ok"),
        );
    }
    results
}

/// Streams a message with `message_id` on each binding; returns each stream's events.
async fn streamed(message_id: &str) -> Vec<Vec<Value>> {
    let server = server().await;
    let mut results = Vec::new();
    for binding in BINDINGS {
        let id = format!("{message_id}-{binding:?}");
        results.push(
            stream(
                binding,
                &server.base,
                "SendStreamingMessage",
                send_params(&id, "go"),
            )
            .await
            .expect("stream"),
        );
    }
    results
}

fn only_artifact(task: &Value) -> &Value {
    let artifacts = task["artifacts"].as_array().expect("artifacts");
    assert_eq!(artifacts.len(), 1, "{task}");
    &artifacts[0]
}

/// The status states and artifact texts of a stream, in order, after its leading task.
fn shape(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            if let Some(state) = e["statusUpdate"]["status"]["state"].as_str() {
                format!("status:{state}")
            } else if let Some(artifact) = e.get("artifactUpdate") {
                let part = &artifact["artifact"]["parts"][0];
                let content = part["text"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| part["filename"].as_str().unwrap_or("?").to_owned());
                format!(
                    "artifact:{content}{}{}",
                    if artifact["append"] == true {
                        ":append"
                    } else {
                        ""
                    },
                    if artifact["lastChunk"] == true {
                        ":last"
                    } else {
                        ""
                    }
                )
            } else if let Some(task) = e.get("task") {
                format!("task:{}", task["status"]["state"].as_str().unwrap_or("?"))
            } else {
                format!(
                    "message:{}",
                    e["message"]["parts"][0]["text"].as_str().unwrap_or("?")
                )
            }
        })
        .collect()
}

#[tokio::test]
async fn complete_the_task() {
    for result in unary("tck-complete-task").await {
        let task = task_of(&result);
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(
            task["status"]["message"]["parts"][0]["text"],
            "Hello from TCK"
        );
    }
}

#[tokio::test]
async fn task_with_text_artifact() {
    for result in unary("tck-artifact-text").await {
        let task = task_of(&result);
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(
            only_artifact(task)["parts"][0]["text"],
            "Generated text content"
        );
    }
}

#[tokio::test]
async fn task_with_file_artifact() {
    for result in unary("tck-artifact-file").await {
        let task = task_of(&result);
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
        let part = &only_artifact(task)["parts"][0];
        assert!(part["raw"].is_string(), "{part}");
        assert_eq!(part["filename"], "output.txt");
        assert_eq!(part["mediaType"], "text/plain");
    }
}

#[tokio::test]
async fn task_with_file_url_artifact() {
    for result in unary("tck-artifact-file-url").await {
        let part = &only_artifact(task_of(&result))["parts"][0];
        assert_eq!(part["url"], "https://example.com/output.txt");
        assert_eq!(part["filename"], "output.txt");
        assert_eq!(part["mediaType"], "text/plain");
    }
}

#[tokio::test]
async fn task_with_data_artifact() {
    for result in unary("tck-artifact-data").await {
        let part = &only_artifact(task_of(&result))["parts"][0];
        assert_eq!(part["data"], json!({"key": "value", "count": 42}));
    }
}

#[tokio::test]
async fn return_message_instead_of_task() {
    for result in unary("tck-message-response").await {
        assert!(result.get("task").is_none(), "{result}");
        assert_eq!(
            result["message"]["parts"][0]["text"],
            "Direct message response"
        );
        assert_eq!(result["message"]["role"], "ROLE_AGENT");
    }
}

#[tokio::test]
async fn task_requiring_user_input() {
    for result in unary("tck-input-required").await {
        assert_eq!(
            task_of(&result)["status"]["state"],
            "TASK_STATE_INPUT_REQUIRED"
        );
    }
}

#[tokio::test]
async fn task_rejected_by_executor() {
    for result in unary("tck-reject-task").await {
        let task = task_of(&result);
        assert_eq!(task["status"]["state"], "TASK_STATE_REJECTED");
        assert_eq!(task["status"]["message"]["parts"][0]["text"], "rejected");
    }
}

const WORKING: &str = "status:TASK_STATE_WORKING";
const COMPLETED: &str = "status:TASK_STATE_COMPLETED";
const SUBMITTED: &str = "task:TASK_STATE_SUBMITTED";

#[tokio::test]
async fn basic_streaming_lifecycle() {
    for events in streamed("tck-stream-001").await {
        assert_eq!(
            shape(&events),
            [
                SUBMITTED,
                WORKING,
                "artifact:Stream hello from TCK:last",
                COMPLETED
            ]
        );
    }
}

#[tokio::test]
async fn message_only_stream() {
    for events in streamed("tck-stream-002").await {
        assert_eq!(shape(&events), [SUBMITTED, COMPLETED]);
    }
}

#[tokio::test]
async fn task_lifecycle_stream() {
    for events in streamed("tck-stream-003").await {
        assert_eq!(
            shape(&events),
            [
                SUBMITTED,
                WORKING,
                "artifact:Stream task lifecycle:last",
                COMPLETED
            ]
        );
    }
}

#[tokio::test]
async fn streaming_with_ordered_status_updates() {
    for events in streamed("tck-stream-ordering-001").await {
        assert_eq!(
            shape(&events),
            [
                SUBMITTED,
                WORKING,
                "artifact:Ordered output:last",
                COMPLETED
            ]
        );
    }
}

#[tokio::test]
async fn streaming_with_text_artifact() {
    for events in streamed("tck-stream-artifact-text").await {
        assert_eq!(
            shape(&events),
            [
                SUBMITTED,
                WORKING,
                "artifact:Streamed text content:last",
                COMPLETED
            ]
        );
    }
}

#[tokio::test]
async fn streaming_with_file_artifact() {
    for events in streamed("tck-stream-artifact-file").await {
        assert_eq!(
            shape(&events),
            [SUBMITTED, WORKING, "artifact:output.txt:last", COMPLETED]
        );
        let part = &events[2]["artifactUpdate"]["artifact"]["parts"][0];
        assert_eq!(part["mediaType"], "text/plain");
    }
}

#[tokio::test]
async fn streaming_with_chunked_artifact() {
    for events in streamed("tck-stream-artifact-chunked").await {
        assert_eq!(
            shape(&events),
            [
                SUBMITTED,
                WORKING,
                "artifact:chunk-1 ",
                "artifact:chunk-2:append:last",
                COMPLETED
            ]
        );
    }
}

#[tokio::test]
async fn long_running_task_for_resubscription() {
    let server = server().await;
    for binding in BINDINGS {
        let mut params = send_params(&format!("test-resubscribe-message-id-{binding:?}"), "go");
        params["configuration"] = json!({"returnImmediately": true});
        let task = call(binding, &server.base, "SendMessage", params)
            .await
            .expect("ok");
        let id = task_of(&task)["id"].as_str().expect("id").to_owned();
        let events = stream(binding, &server.base, "SubscribeToTask", json!({"id": id}))
            .await
            .expect("stream");
        assert!(events[0].get("task").is_some());
        assert_eq!(last_state(&events), "TASK_STATE_COMPLETED", "{events:?}");
    }
}
