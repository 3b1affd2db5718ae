//! A Server-Sent Events parser (WHATWG): `data` lines joined with newlines, `event`, `id` and
//! `retry` fields, comments (keep-alives) skipped, and `\n`, `\r\n` or `\r` line ends.

/// One dispatched event.
///
/// ```
/// use a2a_protocol_client::sse::SseParser;
///
/// let events = SseParser::new().feed(b"event: update\nid: 7\ndata: {\"a\":1}\n\n");
/// assert_eq!(events[0].event.as_deref(), Some("update"));
/// assert_eq!((events[0].id.as_deref(), events[0].data.as_str()), (Some("7"), "{\"a\":1}"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field, if any.
    pub event: Option<String>,
    /// The data lines, joined by `\n`.
    pub data: String,
    /// The `id` field, if any.
    pub id: Option<String>,
    /// The `retry` field, in milliseconds, if any.
    pub retry: Option<u64>,
}

/// Feeds bytes in, takes events out.
///
/// ```
/// use a2a_protocol_client::sse::SseParser;
///
/// let mut parser = SseParser::new();
/// assert!(parser.feed(b": keep-alive\n\ndata: par").is_empty(), "a comment, then half an event");
/// let events = parser.feed(b"t one\r\ndata: part two\r\n\r\n");
/// assert_eq!(events[0].data, "part one\npart two");
/// ```
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    current: SseEvent,
    has_data: bool,
    /// The last byte fed was a `\r`, so a following `\n` belongs to the same line end.
    after_cr: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    ///
    /// ```
    /// use a2a_protocol_client::sse::SseParser;
    ///
    /// assert!(SseParser::new().feed(b"").is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `bytes`; returns the events they complete.
    ///
    /// ```
    /// use a2a_protocol_client::sse::SseParser;
    ///
    /// let mut parser = SseParser::new();
    /// let events = parser.feed(b"data: 1\n\ndata: 2\n\nretry: 3000\n");
    /// assert_eq!(events.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(), ["1", "2"]);
    /// ```
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in bytes {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.buffer);
                    if let Some(event) = self.line(&line) {
                        events.push(event);
                    }
                }
                _ => self.buffer.push(byte),
            }
        }
        events
    }

    fn line(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            let event = std::mem::take(&mut self.current);
            let dispatch = std::mem::take(&mut self.has_data);
            return dispatch.then_some(event);
        }
        if line[0] == b':' {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.current.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.current.id = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse() {
                    self.current.retry = Some(ms);
                }
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_line_data_comments_and_fields() {
        let mut parser = SseParser::new();
        let events = parser.feed(
            b": keep-alive\n\nevent: update\nid: 7\nretry: 1500\ndata: {\"a\":\ndata: 1}\n\n",
        );
        assert_eq!(
            events,
            vec![SseEvent {
                event: Some("update".into()),
                data: "{\"a\":\n1}".into(),
                id: Some("7".into()),
                retry: Some(1500),
            }]
        );
    }

    #[test]
    fn events_split_across_chunks_and_any_line_ending() {
        let mut parser = SseParser::new();
        assert!(parser.feed(b"data: one\r").is_empty());
        let events = parser.feed(b"\n\r\ndata:two\r\rdata: three\n");
        assert_eq!(
            events.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(),
            ["one", "two"]
        );
        assert_eq!(parser.feed(b"\n")[0].data, "three");
    }

    proptest::proptest! {
        /// However the bytes arrive, the same events come out.
        #[test]
        fn chunking_never_changes_the_events(
            datas in proptest::collection::vec("[a-z{}\":, ]{0,12}", 1..6),
            cuts in proptest::collection::vec(0usize..200, 0..8),
            crlf in proptest::bool::ANY,
        ) {
            let newline = if crlf { "\r\n" } else { "\n" };
            let text: String = datas
                .iter()
                .map(|d| format!(": ping{newline}data: {d}{newline}{newline}"))
                .collect();
            let bytes = text.as_bytes();
            let mut whole = SseParser::new();
            let expected = whole.feed(bytes);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut pieces = SseParser::new();
            let mut got = Vec::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                got.extend(pieces.feed(&bytes[start..cut]));
                start = cut;
            }
            proptest::prop_assert_eq!(&got, &expected);
            let data: Vec<&str> = expected.iter().map(|e| e.data.as_str()).collect();
            proptest::prop_assert_eq!(data, datas.iter().map(String::as_str).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_comment_only_block_dispatches_nothing() {
        let mut parser = SseParser::new();
        assert!(parser.feed(b":\n:ping\n\n\n").is_empty());
    }
}
