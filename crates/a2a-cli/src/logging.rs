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
        // One filter for the whole subscriber (cheaper on every span entered than a filter
        // per layer, which only the OpenTelemetry export below needs), and no boxed layers:
        // every span pays each layer's hooks on open, enter, exit and close, and concrete
        // types let the ones that do nothing compile away.
        match filter {
            LogFilter::Targets(targets) => tracing_subscriber::registry()
                .with(targets)
                .with(log_layer())
                .init(),
            LogFilter::Env(env) => tracing_subscriber::registry()
                .with(env)
                .with(log_layer())
                .init(),
        }
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

/// The log layer: lines on stderr, in colour on a terminal.
type LogLayer<S> = tracing_subscriber::fmt::Layer<
    S,
    PlainFields,
    tracing_subscriber::fmt::format::Format,
    fn() -> std::io::Stderr,
>;

/// Log lines on stderr, in colour on a terminal. Span fields are formatted when each span
/// opens (every request and turn), for the lines that may come inside it, as plain
/// `name=value` ([`PlainFields`]), which costs a fraction of the default formatter.
fn log_layer<S>() -> LogLayer<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr as fn() -> std::io::Stderr)
        .with_ansi(ansi)
        .fmt_fields(PlainFields)
}

/// Fields as `message name=value name=value`: the message first and bare, identifiers bare,
/// any other text quoted and escaped (so a value cannot forge a field or a line). On a
/// terminal, names are in italics, as the default formatter writes them.
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
            let ansi = writer.has_ansi_escapes();
            let Ok(mut out) = scratch.try_borrow_mut() else {
                let mut out = String::new();
                fields.record(&mut Plain {
                    out: &mut out,
                    ansi,
                });
                return writer.write_str(&out);
            };
            out.clear();
            fields.record(&mut Plain {
                out: &mut out,
                ansi,
            });
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
    /// Names in italics (for a terminal).
    ansi: bool,
}

impl Plain<'_> {
    fn name(&mut self, field: &tracing::field::Field) -> bool {
        if !self.out.is_empty() {
            self.out.push(' ');
        }
        if field.name() == "message" {
            return false;
        }
        if self.ansi {
            self.out.push_str("\x1b[3m");
            self.out.push_str(field.name());
            self.out.push_str("\x1b[0m\x1b[2m=\x1b[0m");
        } else {
            self.out.push_str(field.name());
            self.out.push('=');
        }
        true
    }
}

/// Whether a text can be written bare: an id, a name, an address (ASCII letters and digits,
/// `-`, `_`, `.`, `:`, `/`). Checked for every field of every span, so by three comparisons
/// a byte and no branches (cheaper than a lookup table, measured with callgrind).
fn is_bare(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .fold(true, |bare, byte| bare & is_bare_byte(byte))
}

fn is_bare_byte(byte: u8) -> bool {
    // `-`, `.`, `/`, the digits and `:` are one run of ASCII (0x2d..=0x3a); setting bit 5
    // maps upper-case letters onto lower-case ones and nothing else onto them.
    let letter = (byte | 0x20).wrapping_sub(b'a') < 26;
    let run = byte.wrapping_sub(b'-') <= b':' - b'-';
    letter | run | (byte == b'_')
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
        // Every byte agrees with the rule as written plainly.
        for byte in 0..=u8::MAX {
            let plain = byte.is_ascii_alphanumeric() || b"-_.:/".contains(&byte);
            assert_eq!(is_bare_byte(byte), plain, "byte {byte:#04x}");
        }
        assert!(!is_bare("id,other"));
        assert!(!is_bare("caf\u{e9}"));
    }

    /// A log line for an event inside a span, written with [`PlainFields`].
    fn line(ansi: bool) -> String {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let written = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(ansi)
            .fmt_fields(PlainFields)
            .with_writer(move || written.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let _span = tracing::info_span!("agent_turn", task_id = "t-1").entered();
            tracing::info!(note = "two words", "stored");
        });
        String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn fields_are_plain_in_a_file_and_names_italic_on_a_terminal() {
        let plain = line(false);
        assert!(plain.contains("agent_turn{task_id=t-1}"), "{plain}");
        assert!(plain.contains("stored note=\"two words\""), "{plain}");
        let coloured = line(true);
        assert!(
            coloured.contains("\x1b[3mtask_id\x1b[0m\x1b[2m=\x1b[0mt-1"),
            "{coloured:?}"
        );
        assert!(coloured.contains("\x1b[3mnote\x1b[0m"), "{coloured:?}");
    }
}
