//! Finds where SSE events end in the raw bytes of an HTTP/1.1 answer: after its head, through
//! chunked transfer coding when the answer uses it, with any of the line ends SSE allows
//! (`\n`, `\r\n`, `\r`), so "cut after N events" fires in front of any server.

/// Reads an answer's bytes one at a time and says which byte ends an event.
#[derive(Debug, Default)]
pub(super) struct EventEnds {
    /// The status line and headers, until they end.
    head: Vec<u8>,
    body: Option<Body>,
    /// The current SSE line has no bytes yet.
    line_empty: bool,
    /// The last payload byte was `\r`, so a `\n` now belongs to the same line end.
    after_cr: bool,
    /// An event ended with a `\r`: the next payload byte says whether a `\n` completes it.
    pending_end: bool,
}

#[derive(Debug)]
enum Body {
    /// Not a stream: no event ever ends.
    Other,
    /// A stream whose bytes are its payload.
    Plain,
    /// A stream in chunked transfer coding.
    Chunked(Chunk),
}

/// Where a chunked decoder is.
#[derive(Debug, Clone, Copy)]
enum Chunk {
    /// Reading the hex size; `in_extension` once a `;` was seen.
    Size { size: u64, in_extension: bool },
    /// Reading `left` payload bytes.
    Data { left: u64 },
    /// The line end after a chunk's payload.
    DataEnd,
    /// After the last chunk: trailers, ignored.
    Done,
}

const FIRST_SIZE: Chunk = Chunk::Size {
    size: 0,
    in_extension: false,
};

/// What one byte of the answer was.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Byte {
    /// Part of the head, or of a stream's payload or framing.
    Other,
    /// The head ended and the answer is not an event stream.
    NotAStream,
    /// The byte that ends an SSE event.
    EventEnd,
    /// An SSE event ended just before this byte (with a lone `\r`).
    EventEndedBefore,
}

impl EventEnds {
    pub(super) fn new() -> Self {
        Self {
            line_empty: true,
            ..Self::default()
        }
    }

    pub(super) fn push(&mut self, byte: u8) -> Byte {
        let Some(body) = &mut self.body else {
            self.head.push(byte);
            if !self.head.ends_with(b"\r\n\r\n") {
                return Byte::Other;
            }
            let head = std::mem::take(&mut self.head).to_ascii_lowercase();
            let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
            let body = if !has(b"text/event-stream") {
                Body::Other
            } else if has(b"transfer-encoding: chunked") {
                Body::Chunked(FIRST_SIZE)
            } else {
                Body::Plain
            };
            let streaming = !matches!(body, Body::Other);
            self.body = Some(body);
            return if streaming {
                Byte::Other
            } else {
                Byte::NotAStream
            };
        };
        let payload = match body {
            Body::Other => return Byte::Other,
            Body::Plain => true,
            Body::Chunked(state) => {
                let (next, payload) = step(*state, byte);
                *state = next;
                payload
            }
        };
        if payload {
            self.line_byte(byte)
        } else {
            Byte::Other
        }
    }

    /// Feeds one payload byte. An event ends at a line end on an empty line; one that ends
    /// in `\r` is known only at the next byte, which may be the `\n` of a CRLF.
    fn line_byte(&mut self, byte: u8) -> Byte {
        let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
        if std::mem::take(&mut self.pending_end) {
            if byte == b'\n' {
                return Byte::EventEnd;
            }
            // The lone `\r` ended the event; this byte starts the next one.
            self.line_byte_in_event(byte, false);
            return Byte::EventEndedBefore;
        }
        self.line_byte_in_event(byte, after_cr)
    }

    fn line_byte_in_event(&mut self, byte: u8, after_cr: bool) -> Byte {
        match byte {
            b'\n' if after_cr => Byte::Other,
            b'\n' | b'\r' => {
                if !std::mem::replace(&mut self.line_empty, true) {
                    Byte::Other
                } else if byte == b'\r' {
                    self.pending_end = true;
                    Byte::Other
                } else {
                    Byte::EventEnd
                }
            }
            _ => {
                self.line_empty = false;
                Byte::Other
            }
        }
    }
}

/// One byte through the chunked decoder: the next state, and whether the byte is payload.
fn step(state: Chunk, byte: u8) -> (Chunk, bool) {
    match state {
        Chunk::Size { size, in_extension } => match byte {
            b'\n' if size == 0 => (Chunk::Done, false),
            b'\n' => (Chunk::Data { left: size }, false),
            b';' => (
                Chunk::Size {
                    size,
                    in_extension: true,
                },
                false,
            ),
            _ if in_extension => (state, false),
            _ => match (byte as char).to_digit(16) {
                Some(digit) => (
                    Chunk::Size {
                        size: size.saturating_mul(16).saturating_add(u64::from(digit)),
                        in_extension,
                    },
                    false,
                ),
                // `\r` and stray whitespace before the line end.
                None => (state, false),
            },
        },
        Chunk::Data { left } => {
            let next = if left <= 1 {
                Chunk::DataEnd
            } else {
                Chunk::Data { left: left - 1 }
            };
            (next, true)
        }
        Chunk::DataEnd => match byte {
            b'\n' => (FIRST_SIZE, false),
            _ => (Chunk::DataEnd, false),
        },
        Chunk::Done => (Chunk::Done, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offsets (one past the byte) where events end.
    fn ends(answer: &[u8]) -> Vec<usize> {
        let mut reader = EventEnds::new();
        answer
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match reader.push(*b) {
                Byte::EventEnd => Some(i + 1),
                Byte::EventEndedBefore => Some(i),
                _ => None,
            })
            .collect()
    }

    const HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";

    #[test]
    fn events_end_at_a_blank_line_with_any_line_end() {
        for (body, expected) in [
            ("data: 1\n\ndata: 2\n\n", vec![9, 18]),
            ("data: 1\r\n\r\ndata: 2\r\n\r\n", vec![11, 22]),
            // A lone CR ends the first event once the next byte shows it is not a CRLF; the
            // last one stays open, as a client would see it until the stream ends.
            ("data: 1\r\rdata: 2\r\r", vec![9]),
            ("data: 1\ndata: 1b\n\n", vec![18]),
            ("data: 1\r\ndata: 1b\n\r\n", vec![20]),
        ] {
            let answer = format!("{HEAD}{body}");
            let found: Vec<usize> = ends(answer.as_bytes())
                .into_iter()
                .map(|at| at - HEAD.len())
                .collect();
            assert_eq!(found, expected, "{body:?}");
        }
    }

    #[test]
    fn chunk_framing_is_not_read_as_lines() {
        // As uvicorn sends it: each event one chunk, CRLF line ends, CRLF after every chunk.
        let event = "data: {}\r\n\r\n";
        let chunk = format!("{:x};ext=1\r\n{event}\r\n", event.len());
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{chunk}{chunk}0\r\n\r\n"
        );
        let found = ends(answer.as_bytes());
        assert_eq!(found.len(), 2, "{answer:?}");
        assert!(answer[..found[0]].ends_with("data: {}\r\n\r\n"));
    }

    #[test]
    fn an_answer_that_is_not_a_stream_has_no_events() {
        let mut reader = EventEnds::new();
        let answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{}\n\n";
        let kinds: Vec<Byte> = answer.iter().map(|b| reader.push(*b)).collect();
        assert_eq!(kinds.iter().filter(|k| **k == Byte::NotAStream).count(), 1);
        assert!(!kinds.contains(&Byte::EventEnd));
    }
}
