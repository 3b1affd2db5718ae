//! Where `a2a` logs and exports spans: log lines on stderr, filtered by `RUST_LOG`, and with
//! `--otlp-endpoint` spans exported over OTLP.
//!
//! A server opens two spans per send (the request and the agent's turn) and enters them on
//! every poll, so what a span costs is paid tens of thousands of times a second: the filter
//! here tracks no spans unless `RUST_LOG` asks for span directives, and span fields are
//! formatted once, plainly, into one allocation.

use std::cell::RefCell;
use std::fmt::{self, Write as _};

use tracing_subscriber::field::{RecordFields, Visit};
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

/// Logs to stderr at `default_level` (`RUST_LOG` overrides it), and exports spans at info and
/// above through `tracer` when there is one (whatever the log level: quiet logs should not
/// mean a broken trace).
pub(crate) fn init(
    default_level: &str,
    tracer: Option<&opentelemetry_sdk::trace::SdkTracerProvider>,
) {
    use opentelemetry::trace::TracerProvider;
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let spec = std::env::var("RUST_LOG")
        .ok()
        .filter(|spec| !spec.trim().is_empty())
        .unwrap_or_else(|| default_level.to_owned());
    let filter = LogFilter::parse(&spec, default_level);
    let Some(provider) = tracer else {
        // One filter for the whole subscriber: cheaper on every span entered than a filter
        // per layer, which only the OpenTelemetry export below needs.
        let global = match filter {
            LogFilter::Targets(targets) => targets.boxed(),
            LogFilter::Env(env) => env.boxed(),
        };
        tracing_subscriber::registry()
            .with(global)
            .with(log_layer())
            .init();
        return;
    };
    let per_layer: Box<dyn tracing_subscriber::layer::Filter<_> + Send + Sync> = match filter {
        LogFilter::Targets(targets) => Box::new(targets),
        LogFilter::Env(env) => Box::new(env),
    };
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("a2a"))
        .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    tracing_subscriber::registry()
        .with(log_layer().with_filter(per_layer))
        .with(spans)
        .init();
}

/// What `RUST_LOG` selects.
// Made once at startup and consumed at once: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum LogFilter {
    /// Targets and levels only (`info`, `a2a_protocol_server=debug,warn`): decided per
    /// callsite, nothing kept per span.
    Targets(Targets),
    /// Span or field directives (`[a2a_request{operation=SendMessage}]=debug`), which need
    /// every span's fields tracked.
    Env(EnvFilter),
}

impl LogFilter {
    /// `spec` read as `RUST_LOG` syntax; when it cannot be read, `default_level`, and a line
    /// on stderr saying so (logging is not up yet).
    fn parse(spec: &str, default_level: &str) -> Self {
        let has_span_directives = spec.contains(['[', '{']);
        if !has_span_directives && let Ok(targets) = spec.parse::<Targets>() {
            return LogFilter::Targets(targets);
        }
        match EnvFilter::try_new(spec) {
            Ok(env) => LogFilter::Env(env),
            Err(error) => {
                eprintln!(
                    "RUST_LOG={spec:?} is not a log filter ({error}); logging at {default_level}"
                );
                LogFilter::Targets(default_level.parse().unwrap_or_default())
            }
        }
    }
}

/// Log lines on stderr, in colour on a terminal. Span fields are formatted when each span
/// opens (every request and turn), for the lines that may come inside it: without colours,
/// plain `name=value` ([`PlainFields`]) costs a fraction of the default styled formatter.
fn log_layer<S>() -> Box<dyn tracing_subscriber::Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    use tracing_subscriber::Layer;

    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    if ansi {
        return logs.boxed();
    }
    logs.fmt_fields(PlainFields).boxed()
}

/// Fields as `message name=value name=value`: the message first and bare, identifiers bare,
/// any other text quoted and escaped (so a value cannot forge a field or a line).
struct PlainFields;

thread_local! {
    /// Fields are formatted here and copied out in one piece, so a span's formatted fields
    /// are one allocation of the right size rather than a string grown field by field.
    static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
}

impl<'writer> FormatFields<'writer> for PlainFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        SCRATCH.with(|scratch| {
            // A writer that is itself formatting fields (a field whose value logs) gets its
            // own buffer rather than a second borrow.
            let Ok(mut out) = scratch.try_borrow_mut() else {
                let mut out = String::new();
                fields.record(&mut Plain { out: &mut out });
                return writer.write_str(&out);
            };
            out.clear();
            fields.record(&mut Plain { out: &mut out });
            let written = writer.write_str(&out);
            // A burst of long lines should not pin a large buffer per thread.
            if out.capacity() > 4096 {
                *out = String::new();
            }
            written
        })
    }
}

struct Plain<'a> {
    out: &'a mut String,
}

impl Plain<'_> {
    fn name(&mut self, field: &tracing::field::Field) -> bool {
        if !self.out.is_empty() {
            self.out.push(' ');
        }
        if field.name() == "message" {
            return false;
        }
        self.out.push_str(field.name());
        self.out.push('=');
        true
    }
}

/// Whether a text can be written bare: an id, a name, an address. Checked for every field
/// of every span, so by table.
fn is_bare(value: &str) -> bool {
    const BARE: [bool; 256] = {
        let mut table = [false; 256];
        let mut byte = 0;
        while byte < 256 {
            let b = byte as u8;
            table[byte] =
                b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'/');
            byte += 1;
        }
        table
    };
    !value.is_empty() && value.bytes().all(|b| BARE[usize::from(b)])
}

impl Visit for Plain<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if !self.name(field) || is_bare(value) {
            self.out.push_str(value);
        } else {
            let _ = write!(self.out, "{value:?}");
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        self.name(field);
        let _ = write!(self.out, "{value:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_targets_need_no_span_tracking_and_span_directives_do() {
        assert!(matches!(
            LogFilter::parse("a2a_protocol_server=debug,warn", "info"),
            LogFilter::Targets(_)
        ));
        assert!(matches!(
            LogFilter::parse("[a2a_request{operation=SendMessage}]=debug", "info"),
            LogFilter::Env(_)
        ));
        assert!(matches!(
            LogFilter::parse("not a filter=", "info"),
            LogFilter::Targets(_)
        ));
    }

    #[test]
    fn ids_are_bare_and_other_text_is_quoted() {
        assert!(is_bare("3f2c1d9e-7a1b-4c3d-9e8f-0a1b2c3d4e5f"));
        assert!(is_bare("127.0.0.1:8080"));
        assert!(!is_bare("two words"));
        assert!(!is_bare("a\nforged=line"));
        assert!(!is_bare(""));
    }
}
