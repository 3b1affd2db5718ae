//! [`ServerHandle`]: what shuts down an agent mounted in someone else's HTTP server.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::handler::RequestHandler;
use crate::store::RetentionSweeper;

/// Shuts down an agent that [`A2aServer::embed`](crate::A2aServer::embed) mounted in an
/// application, the way [`A2aServer::serve`](crate::A2aServer::serve) shuts down its own:
/// call [`shutdown`](Self::shutdown) when the application starts its graceful shutdown.
/// Dropping the handle instead stops the retention sweeper and leaves turns and streams to
/// end with the process.
#[must_use = "keep the handle to shut the agent down; dropping it stops the retention sweeper"]
pub struct ServerHandle {
    handler: RequestHandler,
    streams: CancellationToken,
    drain: Duration,
    sweeper: Option<RetentionSweeper>,
}

impl ServerHandle {
    pub(crate) fn new(
        handler: RequestHandler,
        streams: CancellationToken,
        drain: Duration,
        sweeper: Option<RetentionSweeper>,
    ) -> Self {
        Self {
            handler,
            streams,
            drain,
            sweeper,
        }
    }

    /// Refuses new sends, gives running turns
    /// [`ServerConfig::shutdown_drain`](crate::ServerConfig::shutdown_drain) to finish and
    /// settles the rest, ends every open stream with what its task became, and stops the
    /// retention sweeper. Returns when all of that is done; the application's server can
    /// then finish answering what is in flight.
    pub async fn shutdown(mut self) {
        self.handler.shutdown(self.drain).await;
        self.streams.cancel();
        self.sweeper.take();
    }

    /// The request handler the agent is served by, for calls that do not come over HTTP.
    pub fn handler(&self) -> &RequestHandler {
        &self.handler
    }
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("drain", &self.drain)
            .field("sweeping", &self.sweeper.is_some())
            .finish_non_exhaustive()
    }
}
