//! The agent mounted in an existing axum application, behind the application's own
//! authentication layer, and shut down with it.
//!
//! `cargo run -p a2a-examples --example axum_app` starts the application on a free port,
//! makes a few calls as two users and as nobody, then shuts it down.

use a2a_protocol_client::ClientBuilder;
use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::{A2aServer, CallerIdentity, RequestHandler};
use a2a_protocol_types::{GetTaskRequest, Message, SendMessageRequest, SendMessageResponse};
use axum::http::StatusCode;

/// The application's authentication: a bearer token maps to a user (a real one would verify
/// a JWT or ask a session store). No valid token, no entry.
async fn authenticate(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Result<axum::response::Response, StatusCode> {
    let public = request.uri().path() == "/.well-known/agent-card.json"
        || request.uri().path() == "/healthz";
    let token = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let user = match token {
        Some("alice-token") => Some("alice"),
        Some("bob-token") => Some("bob"),
        _ => None,
    };
    match user {
        // The agent reads the caller from here: it owns the tasks it creates.
        Some(user) => {
            request
                .extensions_mut()
                .insert(CallerIdentity(user.to_owned()));
        }
        None if public => {}
        None => return Err(StatusCode::UNAUTHORIZED),
    }
    Ok(next.run(request).await)
}

fn get(id: &a2a_protocol_types::TaskId) -> GetTaskRequest {
    GetTaskRequest {
        id: id.clone(),
        ..GetTaskRequest::default()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let handler = RequestHandler::builder(EchoAgent::new())
        .with_agent_card(EchoAgent::card())
        .build();
    let (agent, handle) = A2aServer::new(handler)
        .layer(axum::middleware::from_fn(authenticate))
        .embed()
        .await?;
    let app = axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .merge(agent);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
                // Running turns settle and open streams end, so the server can finish.
                handle.shutdown().await;
            })
            .await
    });
    println!("application at {base}");

    let as_user = |token: &str| {
        ClientBuilder::new(base.clone())
            .with_header("authorization", format!("Bearer {token}"))
            .build()
    };
    let alice = as_user("alice-token")?;
    let bob = as_user("bob-token")?;
    let SendMessageResponse::Task(task) = alice
        .send_message(SendMessageRequest::new(Message::user_text("alice's note")))
        .await?
    else {
        panic!("a task");
    };
    println!("alice created task {}", task.id);
    let mine = alice.get_task(get(&task.id)).await?;
    println!("alice reads it: {:?}", mine.status.state);
    let theirs = bob.get_task(get(&task.id)).await;
    println!(
        "bob reads it: {}",
        theirs
            .as_ref()
            .map_or_else(|e| e.to_string(), |t| format!("{:?}", t.status.state))
    );
    assert!(
        theirs.is_err(),
        "another caller's task does not exist for bob"
    );
    let nobody = ClientBuilder::new(base.clone()).build()?;
    let refused = nobody.get_task(get(&task.id)).await;
    println!(
        "without a token: {}",
        refused
            .as_ref()
            .map_or_else(|e| e.to_string(), |_| "served".into())
    );
    assert!(refused.is_err());

    stop.send(()).ok();
    serving.await??;
    println!("the application and its agent stopped");
    Ok(())
}
