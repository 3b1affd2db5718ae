//! What the server reports through the [`metrics`] facade. Nothing is recorded unless the
//! application installs a recorder (for example `metrics-exporter-prometheus`, which
//! `a2a serve --metrics-addr` does), and then each call costs a hash lookup and an atomic add.
//! Every label takes values from a fixed set, so no client can grow the number of series.
//! The table of metrics is in `docs/observability.md`.

use std::time::Instant;

use a2a_protocol_types::A2aError;
use a2a_protocol_types::jsonrpc::methods;

/// Requests answered, by `binding`, `operation` and `outcome`.
pub(crate) const REQUESTS: &str = "a2a_server_requests_total";
/// Seconds from a request's arrival until its answer (for a stream, until it opened).
pub(crate) const REQUEST_SECONDS: &str = "a2a_server_request_duration_seconds";
/// Agent turns running now.
pub(crate) const ACTIVE_TURNS: &str = "a2a_server_active_turns";
/// Event streams open now.
pub(crate) const OPEN_STREAMS: &str = "a2a_server_open_streams";
/// Seconds a store operation took, by `operation`.
pub(crate) const STORE_SECONDS: &str = "a2a_store_operation_duration_seconds";
/// Store operations that failed, by `operation`.
pub(crate) const STORE_ERRORS: &str = "a2a_store_errors_total";

/// The operation label for a JSON-RPC method: its name if it is one of A2A's, else
/// `unknown` (a client must not be able to invent label values).
pub(crate) fn operation_label(method: &str) -> &'static str {
    methods::ALL
        .iter()
        .find(|known| **known == method)
        .copied()
        .unwrap_or("unknown")
}

/// Times one request; records it when finished.
pub(crate) struct RequestTimer {
    binding: &'static str,
    operation: &'static str,
    started: Instant,
}

impl RequestTimer {
    pub(crate) fn start(binding: &'static str, operation: &'static str) -> Self {
        Self {
            binding,
            operation,
            started: Instant::now(),
        }
    }

    /// Records the request with `ok` or the error's reason (`TASK_NOT_FOUND`, ...) as outcome.
    pub(crate) fn finish(self, error: Option<&A2aError>) {
        let outcome = error.map_or("ok", |error| error.kind.reason());
        metrics::counter!(REQUESTS, "binding" => self.binding, "operation" => self.operation, "outcome" => outcome)
            .increment(1);
        metrics::histogram!(REQUEST_SECONDS, "binding" => self.binding, "operation" => self.operation)
            .record(self.started.elapsed().as_secs_f64());
    }
}

/// Counts a running agent turn for as long as it lives.
pub(crate) struct ActiveTurn(());

impl ActiveTurn {
    pub(crate) fn begin() -> Self {
        metrics::gauge!(ACTIVE_TURNS).increment(1.0);
        Self(())
    }
}

impl Drop for ActiveTurn {
    fn drop(&mut self) {
        metrics::gauge!(ACTIVE_TURNS).decrement(1.0);
    }
}

/// Counts an open event stream for as long as it lives.
pub(crate) struct OpenStream(());

impl OpenStream {
    pub(crate) fn begin() -> Self {
        metrics::gauge!(OPEN_STREAMS).increment(1.0);
        Self(())
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        metrics::gauge!(OPEN_STREAMS).decrement(1.0);
    }
}

/// Records how long a store operation took and whether it failed.
pub(crate) fn store_operation<T, E>(
    operation: &'static str,
    started: Instant,
    result: &Result<T, E>,
) {
    metrics::histogram!(STORE_SECONDS, "operation" => operation)
        .record(started.elapsed().as_secs_f64());
    if result.is_err() {
        metrics::counter!(STORE_ERRORS, "operation" => operation).increment(1);
    }
}
