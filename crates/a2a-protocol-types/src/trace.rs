//! W3C Trace Context (`traceparent`), so one trace follows a request from a client through an
//! agent to the agents it delegates to.
//!
//! The server reads the `traceparent` header of each request and runs the agent's turn with
//! the resulting [`TraceContext`] as the *current* one; the client sends a child of the
//! current context with every request it makes from inside that turn. A delegation made by
//! an agent therefore joins the trace of the request that started the agent.
//!
//! ```
//! use a2a_protocol_types::trace::{TraceContext, current, with_current};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let incoming = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
//!     .expect("a valid traceparent");
//! assert_eq!(current(), None);
//! with_current(incoming, async {
//!     let outgoing = current().expect("inside the scope").child();
//!     assert_eq!(outgoing.trace_id(), incoming.trace_id());
//!     assert_ne!(outgoing.span_id(), incoming.span_id());
//! })
//! .await;
//! # }
//! ```

use std::fmt;
use std::future::Future;

/// The HTTP header (and gRPC metadata key) a trace context travels in.
pub const TRACEPARENT_HEADER: &str = "traceparent";

/// One position in a distributed trace: the trace it belongs to, the span that is the parent
/// of whatever happens next, and whether the trace is sampled.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceContext {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

impl TraceContext {
    /// A new trace, sampled, with random ids.
    ///
    /// ```
    /// use a2a_protocol_types::trace::TraceContext;
    ///
    /// assert_ne!(TraceContext::new_root().trace_id(), TraceContext::new_root().trace_id());
    /// ```
    pub fn new_root() -> Self {
        let mut bytes = [0u8; 24];
        fill_random(&mut bytes);
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        trace_id.copy_from_slice(&bytes[..16]);
        span_id.copy_from_slice(&bytes[16..]);
        Self {
            trace_id,
            span_id,
            flags: 1,
        }
    }

    /// The same trace with a new span id: the context to send with an outgoing call.
    ///
    /// ```
    /// use a2a_protocol_types::trace::TraceContext;
    ///
    /// let parent = TraceContext::new_root();
    /// let child = parent.child();
    /// assert_eq!(child.trace_id(), parent.trace_id());
    /// assert_eq!(child.sampled(), parent.sampled());
    /// ```
    pub fn child(&self) -> Self {
        let mut span_id = [0u8; 8];
        fill_random(&mut span_id);
        Self { span_id, ..*self }
    }

    /// Reads a `traceparent` header value (version `00`, or a later version read as `00`
    /// allows). `None` for anything malformed, including the all-zero ids the spec forbids.
    ///
    /// ```
    /// use a2a_protocol_types::trace::TraceContext;
    ///
    /// let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    /// let context = TraceContext::parse(header).expect("valid");
    /// assert_eq!(context.to_string(), header);
    /// assert!(context.sampled());
    /// assert_eq!(TraceContext::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01"), None);
    /// assert_eq!(TraceContext::parse("not a trace"), None);
    /// ```
    pub fn parse(header: &str) -> Option<Self> {
        let header = header.trim();
        let mut fields = header.split('-');
        let version = fields.next()?;
        let trace = fields.next()?;
        let span = fields.next()?;
        let flags = fields.next()?;
        let version = hex_array::<1>(version)?[0];
        // Version ff is invalid; version 00 has exactly four fields; later versions may add
        // fields after the flags, which a version-00 reader ignores.
        if version == 0xff || (version == 0 && fields.next().is_some()) {
            return None;
        }
        let trace_id = hex_array::<16>(trace)?;
        let span_id = hex_array::<8>(span)?;
        let flags = hex_array::<1>(flags)?[0];
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            flags,
        })
    }

    /// A context from its parts (say, a tracing system's current span). `None` for the
    /// all-zero ids the spec forbids.
    ///
    /// ```
    /// use a2a_protocol_types::trace::TraceContext;
    ///
    /// let context = TraceContext::from_parts([7; 16], [9; 8], true).expect("valid ids");
    /// assert_eq!(context.trace_id_bytes(), [7; 16]);
    /// assert_eq!(context.span_id_bytes(), [9; 8]);
    /// assert_eq!(TraceContext::from_parts([0; 16], [9; 8], true), None);
    /// ```
    pub fn from_parts(trace_id: [u8; 16], span_id: [u8; 8], sampled: bool) -> Option<Self> {
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            flags: u8::from(sampled),
        })
    }

    /// The trace id's 16 bytes.
    pub fn trace_id_bytes(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The span id's 8 bytes.
    pub fn span_id_bytes(&self) -> [u8; 8] {
        self.span_id
    }

    /// The trace id as 32 lower-case hex digits.
    ///
    /// ```
    /// use a2a_protocol_types::trace::TraceContext;
    ///
    /// let context = TraceContext::from_parts([0xab; 16], [1; 8], true).expect("valid ids");
    /// assert_eq!(context.trace_id(), "abababababababababababababababab");
    /// assert_eq!(context.trace_id().to_string().len(), 32);
    /// ```
    pub fn trace_id(&self) -> HexId<32> {
        HexId::of(&self.trace_id)
    }

    /// The span id (the parent of what happens next) as 16 lower-case hex digits.
    pub fn span_id(&self) -> HexId<16> {
        HexId::of(&self.span_id)
    }

    /// Whether the caller records this trace.
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl fmt::Display for TraceContext {
    /// The `traceparent` header value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            self.trace_id(),
            self.span_id(),
            self.flags
        )
    }
}

impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceContext({self})")
    }
}

tokio::task_local! {
    static CURRENT: TraceContext;
}

/// The trace context of the task this runs on, if it runs inside [`with_current`] (the server
/// runs every agent turn so).
pub fn current() -> Option<TraceContext> {
    CURRENT.try_with(|context| *context).ok()
}

/// Runs `future` with `context` as the [`current`] trace context. A task spawned inside does
/// not inherit it: wrap its future too.
// Not an `async fn`: that would hold `future` twice in its state (as its argument and inside
// the scope), and a turn's future is large.
pub fn with_current<F: Future>(
    context: TraceContext,
    future: F,
) -> impl Future<Output = F::Output> {
    CURRENT.scope(context, future)
}

/// Random bytes from a fast thread-local generator (uuid's): trace ids must be unique, not
/// secret, and a request should not pay a system call for them.
fn fill_random(bytes: &mut [u8]) {
    for chunk in bytes.chunks_mut(16) {
        let random = uuid::Uuid::new_v4();
        chunk.copy_from_slice(&random.as_bytes()[..chunk.len()]);
    }
}

/// An id as `N` lower-case hex digits, held inline: a request renders its trace id for its
/// span, and a `String` would be an allocation per request for it. Reads as a `&str`
/// ([`as_str`](Self::as_str), `Deref`) and compares with one.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HexId<const N: usize>([u8; N]);

impl<const N: usize> HexId<N> {
    /// The digits of `bytes`, which hold `N / 2` bytes (the callers above pass exactly that).
    fn of(bytes: &[u8]) -> Self {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [b'0'; N];
        for (pair, &byte) in out.chunks_exact_mut(2).zip(bytes) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0x0f)];
        }
        Self(out)
    }

    /// The digits as text.
    pub fn as_str(&self) -> &str {
        // Only ASCII hex digits are ever stored, so this never falls back.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl<const N: usize> std::ops::Deref for HexId<N> {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl<const N: usize> AsRef<str> for HexId<N> {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl<const N: usize> fmt::Display for HexId<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<const N: usize> fmt::Debug for HexId<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<const N: usize> PartialEq<str> for HexId<N> {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl<const N: usize> PartialEq<&str> for HexId<N> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

fn hex_array<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        let high = hex_digit(pair[0])?;
        let low = hex_digit(pair[1])?;
        out[i] = (high << 4) | low;
    }
    Some(out)
}

/// Lower-case only, as the spec requires.
fn hex_digit(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_specs_examples_and_refuses_malformed_values() {
        let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(
            TraceContext::parse(valid).map(|c| c.to_string()),
            Some(valid.into())
        );
        let unsampled =
            TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
        assert_eq!(unsampled.map(|c| c.sampled()), Some(false));
        // A later version with an extra field is read as version 00.
        assert!(
            TraceContext::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz")
                .is_some()
        );
        for bad in [
            "",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bé-01",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_root_context_round_trips_through_its_header() {
        let root = TraceContext::new_root();
        assert_eq!(TraceContext::parse(&root.to_string()), Some(root));
        assert_eq!(root.trace_id().len(), 32);
        assert_eq!(root.span_id().len(), 16);
        let known = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
            .expect("valid");
        assert_eq!(known.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(known.span_id().as_str(), "00f067aa0ba902b7");
        assert_eq!(format!("{:?}", known.span_id()), "\"00f067aa0ba902b7\"");
    }
}
