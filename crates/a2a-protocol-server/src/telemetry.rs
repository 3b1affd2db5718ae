//! What the server reports through the [`metrics`] facade. Nothing is recorded unless the
//! application installs a recorder (for example `metrics-exporter-prometheus`, which
//! `a2a serve --metrics-addr` does), and then each call costs a hash lookup and an atomic add.
//! Every label takes values from a fixed set, so no client can grow the number of series.
//! The table of metrics is in `docs/embedding.md`.
//!
//! Names and labels are literals where they can be, so the facade builds their keys once; the
//! request metrics, whose labels vary, keep their handles in [`RequestMetrics`].

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Instant;

use metrics::{Counter, Histogram};

use a2a_protocol_types::A2aError;
use a2a_protocol_types::jsonrpc::methods;

/// Requests answered, by `binding`, `operation` and `outcome`.
pub(crate) const REQUESTS: &str = "a2a_server_requests_total";
/// Seconds from a request's arrival until its answer (for a stream, until it opened).
pub(crate) const REQUEST_SECONDS: &str = "a2a_server_request_duration_seconds";

/// The operation label for a JSON-RPC method: its name if it is one of A2A's, else
/// `unknown` (a client must not be able to invent label values).
pub(crate) fn operation_label(method: &str) -> &'static str {
    methods::ALL
        .iter()
        .find(|known| **known == method)
        .copied()
        .unwrap_or("unknown")
}

/// A request's binding, operation and outcome.
type RequestLabels = (&'static str, &'static str, &'static str);

/// The request metrics' handles, by binding, operation and outcome: looked up once per
/// combination, so a request pays a read lock and a hash instead of building a key. Handles
/// come from the recorder installed when a combination is first seen, so install it before
/// the server answers requests. Hashed with foldhash: the labels are a fixed set, so the
/// flooding SipHash guards against cannot happen, and SipHash over three strings was a few
/// hundred instructions per request.
#[derive(Default)]
pub(crate) struct RequestMetrics {
    handles: RwLock<HashMap<RequestLabels, (Counter, Histogram), foldhash::fast::RandomState>>,
}

impl RequestMetrics {
    fn record(&self, labels: RequestLabels, seconds: f64) {
        let read = self.handles.read().unwrap_or_else(|e| e.into_inner());
        if let Some((counter, histogram)) = read.get(&labels) {
            counter.increment(1);
            histogram.record(seconds);
            return;
        }
        drop(read);
        let (binding, operation, outcome) = labels;
        let counter = metrics::counter!(REQUESTS, "binding" => binding, "operation" => operation, "outcome" => outcome);
        let histogram =
            metrics::histogram!(REQUEST_SECONDS, "binding" => binding, "operation" => operation);
        counter.increment(1);
        histogram.record(seconds);
        self.handles
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(labels, (counter, histogram));
    }
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
    pub(crate) fn finish(self, metrics: &RequestMetrics, error: Option<&A2aError>) {
        let outcome = error.map_or("ok", |error| error.kind.reason());
        metrics.record(
            (self.binding, self.operation, outcome),
            self.started.elapsed().as_secs_f64(),
        );
    }
}

/// Holds one unit of a gauge (a running turn, an open stream) until dropped, through the
/// handle it got, so the gauge is looked up once.
pub(crate) struct GaugeHeld(metrics::Gauge);

impl GaugeHeld {
    fn hold(gauge: metrics::Gauge) -> Self {
        gauge.increment(1.0);
        Self(gauge)
    }

    /// A running agent turn.
    pub(crate) fn active_turn() -> Self {
        Self::hold(cached!(metrics::Gauge, metrics::gauge!("a2a_server_active_turns")).clone())
    }

    /// An open event stream.
    pub(crate) fn open_stream() -> Self {
        Self::hold(cached!(metrics::Gauge, metrics::gauge!("a2a_server_open_streams")).clone())
    }
}

impl Drop for GaugeHeld {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// A metric's handle, looked up in the recorder once per call site: a lookup hashes and
/// compares the whole key on every use, which a request would pay several times. Handles
/// come from the recorder installed when a site is first reached, so install it before the
/// server answers requests (as for [`RequestMetrics`]).
macro_rules! cached {
    ($kind:ty, $handle:expr) => {{
        static HANDLE: std::sync::OnceLock<$kind> = std::sync::OnceLock::new();
        HANDLE.get_or_init(|| $handle)
    }};
}
pub(crate) use cached;

/// Times a store call and records it under the literal `operation` label.
macro_rules! timed_store_call {
    ($operation:literal, $call:expr $(,)?) => {{
        let started = std::time::Instant::now();
        let result = $call.await;
        $crate::telemetry::cached!(
            metrics::Histogram,
            metrics::histogram!("a2a_store_operation_duration_seconds", "operation" => $operation)
        )
        .record(started.elapsed().as_secs_f64());
        if result.is_err() {
            metrics::counter!("a2a_store_errors_total", "operation" => $operation).increment(1);
        }
        result
    }};
}
pub(crate) use timed_store_call;

/// Whether the subscriber in effect has an OpenTelemetry layer: a probe span takes a parent
/// only where one is. The probe's parent is unsampled, so nothing of it is exported.
#[cfg(feature = "otel")]
pub(crate) fn exports_spans() -> bool {
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId};
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    let probe = tracing::info_span!("a2a_opentelemetry_probe");
    if probe.is_disabled() {
        return false;
    }
    let unsampled = SpanContext::new(
        TraceId::from_bytes([1; 16]),
        SpanId::from_bytes([1; 8]),
        TraceFlags::default(),
        true,
        opentelemetry::trace::TraceState::default(),
    );
    let parent = opentelemetry::Context::new().with_remote_span_context(unsampled);
    probe.set_parent(parent).is_ok()
}

/// With the `otel` feature: makes `span` (a request's span) a child of the caller's span in
/// the OpenTelemetry context, and the request's trace context the span's own ids, so what
/// the agent calls next is a child of a span an OpenTelemetry layer exports. Without an
/// OpenTelemetry layer installed, nothing changes.
#[cfg(feature = "otel")]
pub(crate) fn join_otel_trace(
    span: &tracing::Span,
    headers: &http::HeaderMap,
    trace: &mut Option<a2a_protocol_types::trace::TraceContext>,
) {
    use a2a_protocol_types::trace::{TRACEPARENT_HEADER, TraceContext};
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    let incoming = headers
        .get(TRACEPARENT_HEADER)
        .and_then(|value| value.to_str().ok())
        .and_then(TraceContext::parse);
    if let Some(incoming) = incoming {
        let flags = if incoming.sampled() {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        let remote = SpanContext::new(
            TraceId::from_bytes(incoming.trace_id_bytes()),
            SpanId::from_bytes(incoming.span_id_bytes()),
            flags,
            true,
            TraceState::default(),
        );
        let parent = opentelemetry::Context::new().with_remote_span_context(remote);
        if span.set_parent(parent).is_err() {
            return; // No OpenTelemetry layer, or the span is disabled.
        }
    }
    let context = span.context();
    let own = context.span().span_context().clone();
    if own.is_valid() {
        *trace = TraceContext::from_parts(
            own.trace_id().to_bytes(),
            own.span_id().to_bytes(),
            own.is_sampled(),
        )
        .or(*trace);
    }
}
