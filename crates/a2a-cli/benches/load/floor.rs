//! The floor: the least an A2A server can do for a `SendMessage`. One axum route reads the
//! JSON-RPC body with serde (typed, as a real server must) and answers with a fixed completed
//! task. Nothing is stored and no agent runs, so its throughput bounds what any server on the
//! same HTTP stack can reach.

use std::sync::Arc;

use a2a_protocol_types::jsonrpc::{JsonRpcId, JsonRpcRequest, JsonRpcResponse};
use a2a_protocol_types::{
    Artifact, Message, Part, SendMessageRequest, SendMessageResponse, Task, TaskState, TaskStatus,
};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::serve::ListenerExt;
use serde_json::Value;

/// The answer every send gets: a completed task shaped like the echo agent's.
fn fixed_task() -> Value {
    let mut task = Task::new(
        "floor-task",
        "floor-context",
        TaskStatus::new(TaskState::Completed),
    );
    task.history.push(Message::user_text("hello, agent"));
    task.artifacts
        .push(Artifact::new("echo", vec![Part::text("hello, agent")]).with_name("echo"));
    task.status.message = Some(Message::agent_text("hello, agent"));
    serde_json::to_value(SendMessageResponse::Task(task)).expect("a task serializes")
}

async fn send_message(
    State(task): State<Arc<Value>>,
    Json(request): Json<JsonRpcRequest>,
) -> Result<Json<JsonRpcResponse>, StatusCode> {
    let params = request.params.ok_or(StatusCode::BAD_REQUEST)?;
    let _send: SendMessageRequest =
        serde_json::from_value(params).map_err(|_| StatusCode::BAD_REQUEST)?;
    let id = request.id.unwrap_or(JsonRpcId::Null);
    Ok(Json(JsonRpcResponse::success(id, (*task).clone())))
}

/// Serves the floor on 127.0.0.1:`port` until killed.
pub fn serve(port: u16) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind the floor port")
            .tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
        let app = axum::Router::new()
            .route("/", post(send_message))
            .with_state(Arc::new(fixed_task()));
        axum::serve(listener, app).await.expect("the floor serves");
    });
}
