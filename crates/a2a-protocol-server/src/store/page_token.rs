//! Opaque page tokens for `ListTasks`: the sort position of the last task of a page.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Where a page ended: the status time (ms since the epoch) and id of its last task.
///
/// ```
/// use a2a_protocol_server::store::PageCursor;
///
/// let cursor = PageCursor { status_millis: 1_700_000_000_000, task_id: "t-9".into() };
/// assert_eq!(PageCursor::decode(&cursor.encode()), Some(cursor));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PageCursor {
    /// The last task's status time, in milliseconds since the Unix epoch.
    pub status_millis: i64,
    /// The last task's id.
    pub task_id: String,
}

impl PageCursor {
    /// The token a client passes back as `pageToken`.
    ///
    /// ```
    /// use a2a_protocol_server::store::PageCursor;
    ///
    /// let token = PageCursor { status_millis: 5, task_id: "t-1".into() }.encode();
    /// assert!(token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "URL-safe");
    /// ```
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}:{}", self.status_millis, self.task_id))
    }

    /// Reads a token; `None` if it is not one this server made.
    ///
    /// ```
    /// use a2a_protocol_server::store::PageCursor;
    ///
    /// assert_eq!(PageCursor::decode("not a token"), None);
    /// ```
    pub fn decode(token: &str) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let (millis, task_id) = text.split_once(':')?;
        Some(Self {
            status_millis: millis.parse().ok()?,
            task_id: task_id.to_owned(),
        })
    }
}
