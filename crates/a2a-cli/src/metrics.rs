//! `a2a serve --metrics-addr`: the server's metrics in the Prometheus text format.

use std::net::SocketAddr;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

use crate::exit::Failure;

/// Latency buckets, in seconds: from a fast in-memory answer to a slow blocking send.
const SECONDS_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0,
];

/// Records every metric from now on and serves them at `http://{addr}/metrics` (any path).
pub(crate) fn serve_prometheus(addr: SocketAddr) -> Result<(), Failure> {
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
        .map_err(|e| Failure::internal(format!("metric buckets: {e}")))?
        .install()
        .map_err(|e| Failure::usage(format!("cannot serve metrics on {addr}: {e}")))
}
