//! `a2a serve --otlp-endpoint`: spans exported to an OpenTelemetry collector over OTLP/HTTP.

use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::exit::Failure;

/// A tracer provider that batches spans to `endpoint` (`http://HOST:4318`, the collector's
/// OTLP/HTTP port; `/v1/traces` is added when the URL has no path).
pub(crate) fn provider(endpoint: &str) -> Result<SdkTracerProvider, Failure> {
    let url = traces_url(endpoint)?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(url)
        .with_headers(Default::default())
        .build()
        .map_err(|e| Failure::usage(format!("cannot export spans to {endpoint}: {e}")))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("a2a")
        .build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

fn traces_url(endpoint: &str) -> Result<String, Failure> {
    let parsed = reqwest::Url::parse(endpoint).map_err(|e| {
        Failure::usage(format!(
            "--otlp-endpoint {endpoint:?} is not a URL ({e}); give the collector's OTLP/HTTP \
             address, such as http://127.0.0.1:4318"
        ))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Failure::usage(format!(
            "--otlp-endpoint must be an http:// or https:// URL, not {endpoint:?}"
        )));
    }
    Ok(if parsed.path() == "/" {
        format!("{}/v1/traces", endpoint.trim_end_matches('/'))
    } else {
        endpoint.to_owned()
    })
}
