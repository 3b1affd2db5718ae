//! Servers on 127.0.0.1:0 and an agent that counts its turns.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_protocol_server::{A2aServer, AgentExecutor, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::{A2aError, Artifact, Part};
use async_trait::async_trait;
use tokio::sync::oneshot;

/// A server running until dropped; then, the test fails if any JSON body it wrote is not strict
/// A2A v1.0.1 (see [`a2a_wire_check`]).
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it wrote, checked.
    pub wire: a2a_wire_check::Recorder,
    stop: Option<oneshot::Sender<()>>,
}

impl Running {
    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if !std::thread::panicking() {
            self.wire.assert_clean();
        }
    }
}

/// Serves `handler` on a free port of 127.0.0.1.
pub async fn serve(handler: RequestHandler) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    serve_on(listener, handler)
}

/// Serves `handler` on `listener`.
pub fn serve_on(listener: tokio::net::TcpListener, handler: RequestHandler) -> Running {
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = oneshot::channel::<()>();
    let wire = a2a_wire_check::Recorder::new();
    let server = A2aServer::new(handler).layer(axum::middleware::from_fn_with_state(
        wire.clone(),
        a2a_wire_check::record,
    ));
    tokio::spawn(async move {
        let _ = server
            .serve(listener, async {
                let _ = stopped.await;
            })
            .await;
    });
    Running {
        addr,
        wire,
        stop: Some(stop),
    }
}

/// Works for a while (stopping if canceled), then answers with the text it got; counts turns.
#[derive(Clone, Default)]
pub struct CountingAgent {
    runs: Arc<AtomicUsize>,
    delay: Duration,
}

impl CountingAgent {
    /// An agent that works for `delay` per turn.
    pub fn with_delay(delay: Duration) -> Self {
        Self {
            runs: Arc::default(),
            delay,
        }
    }

    /// Turns so far.
    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl AgentExecutor for CountingAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        events.working().await?;
        tokio::select! {
            () = tokio::time::sleep(self.delay) => {}
            () = ctx.cancellation.cancelled() => return Ok(()),
        }
        let text = ctx.message.text();
        events
            .artifact(Artifact::new("answer", vec![Part::text(text.clone())]))
            .await?;
        events.complete(Some(events.agent_message(text))).await
    }
}

/// The folder holding the peer SDKs' scripts and installs.
pub fn interop_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop")
}

static PEERS_READY: std::sync::Mutex<bool> = std::sync::Mutex::new(false);

/// Whether the interop tests are to be skipped: only when `A2A_TEST_INTEROP=skip` (or the
/// older `A2A_SKIP_INTEROP=1`) is set, for working offline (the peers are downloaded from
/// PyPI and npm), and never in CI, where asking for it fails the test instead.
pub fn interop_skipped() -> bool {
    let asked = std::env::var("A2A_TEST_INTEROP").is_ok_and(|v| v == "skip")
        || std::env::var("A2A_SKIP_INTEROP").is_ok_and(|v| v == "1");
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        !(asked && in_ci),
        "A2A_TEST_INTEROP=skip is set in CI, where the interop tests must run; unset it"
    );
    if asked {
        eprintln!("skipping an interop test: A2A_TEST_INTEROP=skip");
    }
    asked
}

/// Installs the pinned peer SDKs once per test binary (`interop/setup.sh`); panics if it cannot.
pub fn ensure_peers() {
    let mut ready = PEERS_READY.lock().unwrap_or_else(|e| e.into_inner());
    if *ready {
        return;
    }
    let status = std::process::Command::new("bash")
        .arg(interop_dir().join("setup.sh"))
        .status()
        .expect("bash runs interop/setup.sh");
    assert!(
        status.success(),
        "interop/setup.sh failed: the peer SDKs could not be installed"
    );
    *ready = true;
}
