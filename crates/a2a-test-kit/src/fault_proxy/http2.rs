//! Faults on HTTP/2 connections (gRPC). One connection carries many calls, one after another
//! or at once, so a fault belongs to a call, not to the connection: each response stream the
//! server opens takes the next fault (the connection's own for the first), and a fault that
//! fires breaks the whole connection, as a real cut would, failing every call then on it.
//!
//! The proxy reads the server's side only as far as frame headers, and the `DATA` of a
//! faulted stream as far as gRPC's length prefixes: HPACK is never decoded, so it cannot
//! tell a unary answer from a stream. Every gRPC answer is a stream of messages on the wire,
//! and a cut after the `n`-th message counts as mid-stream either way.

use std::collections::HashMap;

use super::{Fault, Outcome};

/// The HTTP/2 connection preface a client opens with, and so what tells the protocols apart.
pub(super) const PREFACE_START: &[u8] = b"PRI * HTTP/2.0";

const FRAME_HEADER_LEN: usize = 9;
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const END_STREAM: u8 = 0x1;
const GRPC_PREFIX_LEN: usize = 5;

/// Where the server's bytes stand: in a frame's header, or in its payload.
struct Frame {
    header: [u8; FRAME_HEADER_LEN],
    header_len: usize,
    payload_left: usize,
    kind: u8,
    flags: u8,
    stream: u32,
}

/// One response stream's fault and how far it has got.
struct StreamCut {
    fault: Fault,
    bytes_seen: usize,
    messages: GrpcMessages,
    /// The stream's last wanted message ended in this frame: cut when the frame ends.
    cut_at_frame_end: bool,
}

/// Counts complete gRPC messages (a flag byte, a 4-byte length, then that many bytes).
#[derive(Default)]
struct GrpcMessages {
    prefix: [u8; GRPC_PREFIX_LEN],
    prefix_len: usize,
    body_left: usize,
    complete: usize,
}

impl GrpcMessages {
    /// Reads `bytes` of `DATA` payload; returns how many messages it completed.
    fn push(&mut self, mut bytes: &[u8]) -> usize {
        let before = self.complete;
        while !bytes.is_empty() {
            if self.body_left > 0 {
                let take = self.body_left.min(bytes.len());
                self.body_left -= take;
                bytes = &bytes[take..];
                if self.body_left == 0 {
                    self.complete += 1;
                }
                continue;
            }
            let take = (GRPC_PREFIX_LEN - self.prefix_len).min(bytes.len());
            self.prefix[self.prefix_len..self.prefix_len + take].copy_from_slice(&bytes[..take]);
            self.prefix_len += take;
            bytes = &bytes[take..];
            if self.prefix_len == GRPC_PREFIX_LEN {
                self.prefix_len = 0;
                let length = u32::from_be_bytes([
                    self.prefix[1],
                    self.prefix[2],
                    self.prefix[3],
                    self.prefix[4],
                ]);
                self.body_left = length as usize;
                if self.body_left == 0 {
                    self.complete += 1;
                }
            }
        }
        self.complete - before
    }
}

/// Tracks the server's side of one HTTP/2 connection and says where a fault cuts it.
pub(super) struct Http2Cut {
    /// The fault for the first response stream: the one drawn when the connection came.
    first: Option<Fault>,
    frame: Frame,
    streams: HashMap<u32, StreamCut>,
    /// Calls answered in full (or left unbroken by their fault).
    pub(super) passed: usize,
}

impl Http2Cut {
    pub(super) fn new(first: Fault) -> Self {
        Self {
            first: Some(first),
            frame: Frame {
                header: [0; FRAME_HEADER_LEN],
                header_len: 0,
                payload_left: 0,
                kind: 0,
                flags: 0,
                stream: 0,
            },
            streams: HashMap::new(),
            passed: 0,
        }
    }

    /// Appends to `out` what of `chunk` to forward, and returns the break made after it, if
    /// any. A frame header is held back until it is whole, so a cut before a frame forwards
    /// none of it. `next` draws the fault of each response stream after the first.
    pub(super) fn admit(
        &mut self,
        chunk: &[u8],
        out: &mut Vec<u8>,
        next: &mut dyn FnMut() -> Fault,
    ) -> Option<Outcome> {
        let mut at = 0;
        while at < chunk.len() {
            if self.frame.payload_left == 0 && self.frame.header_len < FRAME_HEADER_LEN {
                let take = (FRAME_HEADER_LEN - self.frame.header_len).min(chunk.len() - at);
                let start = self.frame.header_len;
                self.frame.header[start..start + take].copy_from_slice(&chunk[at..at + take]);
                self.frame.header_len += take;
                at += take;
                if self.frame.header_len < FRAME_HEADER_LEN {
                    break;
                }
                let header = self.frame.header;
                if let Some(outcome) = self.frame_starts(next) {
                    return Some(outcome);
                }
                if let Some((allowed, outcome)) = self.count_bytes(FRAME_HEADER_LEN) {
                    out.extend_from_slice(&header[..allowed]);
                    return Some(outcome);
                }
                out.extend_from_slice(&header);
                if self.frame.payload_left == 0 {
                    self.frame_ends();
                    if let Some(outcome) = self.take_frame_end_cut() {
                        return Some(outcome);
                    }
                }
                continue;
            }
            let take = self.frame.payload_left.min(chunk.len() - at);
            let payload = &chunk[at..at + take];
            if let Some((allowed, outcome)) = self.count_bytes(take) {
                out.extend_from_slice(&payload[..allowed]);
                return Some(outcome);
            }
            out.extend_from_slice(payload);
            self.count_messages(payload);
            at += take;
            self.frame.payload_left -= take;
            if self.frame.payload_left == 0 {
                self.frame_ends();
                if let Some(outcome) = self.take_frame_end_cut() {
                    return Some(outcome);
                }
            }
        }
        None
    }

    /// A frame's header is in: a new response stream takes its fault, and one planned to be
    /// cut before its answer is cut here.
    fn frame_starts(&mut self, next: &mut dyn FnMut() -> Fault) -> Option<Outcome> {
        let header = &self.frame.header;
        let length = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        self.frame.kind = header[3];
        self.frame.flags = header[4];
        self.frame.stream =
            u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
        self.frame.payload_left = length;
        self.frame.header_len = 0;
        let stream = self.frame.stream;
        if stream == 0 || self.frame.kind != HEADERS || self.streams.contains_key(&stream) {
            return None;
        }
        let fault = self.first.take().unwrap_or_else(&mut *next);
        match fault {
            // A call on a connection already made can no longer be refused: cut it instead.
            Fault::CutBeforeResponse | Fault::Refuse => Some(Outcome::CutBeforeResponse),
            fault => {
                self.streams.insert(
                    stream,
                    StreamCut {
                        fault,
                        bytes_seen: 0,
                        messages: GrpcMessages::default(),
                        cut_at_frame_end: false,
                    },
                );
                None
            }
        }
    }

    /// Counts `len` more bytes of the current frame against its stream's byte limit; past
    /// it, how many of them may still go, and the break.
    fn count_bytes(&mut self, len: usize) -> Option<(usize, Outcome)> {
        let stream = self.streams.get_mut(&self.frame.stream)?;
        let Fault::CutAfterBytes(limit) = stream.fault else {
            return None;
        };
        let left = limit.saturating_sub(stream.bytes_seen);
        stream.bytes_seen += len;
        (len >= left).then_some((left, Outcome::CutMidResponse))
    }

    fn count_messages(&mut self, payload: &[u8]) {
        if self.frame.kind != DATA {
            return;
        }
        let Some(stream) = self.streams.get_mut(&self.frame.stream) else {
            return;
        };
        let Fault::CutAfterEvents(limit) = stream.fault else {
            return;
        };
        if stream.messages.push(payload) > 0 && stream.messages.complete >= limit {
            stream.cut_at_frame_end = true;
        }
    }

    /// A frame is through: a stream it ends has passed.
    fn frame_ends(&mut self) {
        let ends = (matches!(self.frame.kind, DATA | HEADERS)
            && self.frame.flags & END_STREAM != 0)
            || self.frame.kind == RST_STREAM;
        if !ends {
            return;
        }
        let cut_pending = self
            .streams
            .get(&self.frame.stream)
            .is_some_and(|s| s.cut_at_frame_end);
        if !cut_pending && self.streams.remove(&self.frame.stream).is_some() {
            self.passed += 1;
        }
    }

    fn take_frame_end_cut(&mut self) -> Option<Outcome> {
        let stream = self.streams.get(&self.frame.stream)?;
        stream.cut_at_frame_end.then_some(Outcome::CutMidStream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut bytes = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        bytes.extend([kind, flags]);
        bytes.extend(stream.to_be_bytes());
        bytes.extend(payload);
        bytes
    }

    fn message(body: &[u8]) -> Vec<u8> {
        let mut bytes = vec![0];
        bytes.extend((body.len() as u32).to_be_bytes());
        bytes.extend(body);
        bytes
    }

    const SETTINGS: u8 = 0x4;

    /// Feeds `answer` a byte at a time (no boundary depends on a chunk's); returns how many
    /// bytes were forwarded, checking they are the answer's first, and the break.
    fn run(cut: &mut Http2Cut, answer: &[u8], next: Fault) -> (usize, Option<Outcome>) {
        let mut forwarded = Vec::new();
        let mut broken = None;
        for byte in answer.chunks(1) {
            broken = cut.admit(byte, &mut forwarded, &mut || next);
            if broken.is_some() {
                break;
            }
        }
        assert_eq!(forwarded, answer[..forwarded.len()], "forwarded as it came");
        (forwarded.len(), broken)
    }

    #[test]
    fn a_cut_before_the_response_lets_the_connections_own_frames_through() {
        let settings = frame(SETTINGS, 0, 0, &[0; 6]);
        let mut answer = settings.clone();
        answer.extend(frame(HEADERS, 4, 1, b"hpack"));
        let mut cut = Http2Cut::new(Fault::CutBeforeResponse);
        assert_eq!(
            run(&mut cut, &answer, Fault::Pass),
            (settings.len(), Some(Outcome::CutBeforeResponse))
        );
    }

    #[test]
    fn each_call_takes_its_own_fault_and_a_finished_call_passes() {
        let mut first = frame(HEADERS, 4, 1, b"h");
        first.extend(frame(DATA, 0, 1, &message(b"task")));
        first.extend(frame(HEADERS, 5, 1, b"t"));
        let second = frame(HEADERS, 4, 3, b"h");
        let mut answer = first.clone();
        answer.extend(&second);
        let mut cut = Http2Cut::new(Fault::Pass);
        assert_eq!(
            run(&mut cut, &answer, Fault::CutBeforeResponse),
            (first.len(), Some(Outcome::CutBeforeResponse))
        );
        assert_eq!(cut.passed, 1);
    }

    #[test]
    fn an_event_cut_forwards_whole_frames_up_to_the_nth_message() {
        let mut answer = frame(HEADERS, 4, 1, b"h");
        // The first message split over two frames, the second in a third.
        let first = message(b"first event");
        answer.extend(frame(DATA, 0, 1, &first[..3]));
        answer.extend(frame(DATA, 0, 1, &first[3..]));
        let through = answer.len();
        answer.extend(frame(DATA, 0, 1, &message(b"second")));
        let mut cut = Http2Cut::new(Fault::CutAfterEvents(1));
        assert_eq!(
            run(&mut cut, &answer, Fault::Pass),
            (through, Some(Outcome::CutMidStream))
        );
    }

    #[test]
    fn a_byte_cut_counts_only_its_own_streams_bytes() {
        let settings = frame(SETTINGS, 0, 0, &[0; 6]);
        let mut answer = settings.clone();
        answer.extend(frame(HEADERS, 4, 1, b"hpack"));
        let mut cut = Http2Cut::new(Fault::CutAfterBytes(12));
        assert_eq!(
            run(&mut cut, &answer, Fault::Pass),
            (settings.len() + 12, Some(Outcome::CutMidResponse))
        );
    }

    #[test]
    fn a_cut_planned_past_the_end_of_the_answer_passes() {
        let mut answer = frame(HEADERS, 4, 1, b"h");
        answer.extend(frame(DATA, 0, 1, &message(b"only")));
        answer.extend(frame(HEADERS, 5, 1, b"t"));
        let mut cut = Http2Cut::new(Fault::CutAfterEvents(2));
        assert_eq!(run(&mut cut, &answer, Fault::Pass), (answer.len(), None));
        assert_eq!(cut.passed, 1);
    }
}
