//! The notices PostgreSQL pushes as tasks change, so followers in other processes need not
//! poll: how one is written on the channel, and the hub that hands them to subscribers
//! ([`NoticeHub`]).

use std::sync::OnceLock;

use a2a_protocol_types::TaskId;
use tokio::sync::broadcast;

use crate::store::{Notice, TaskRef};

/// The channel PostgreSQL notices travel on is this prefix and the store's schema: channels are
/// shared by the whole database, and deployments in other schemas have other tasks.
pub(crate) const CHANNEL: &str = "a2a_notices ";

/// PostgreSQL refuses a payload of 8 000 bytes or more; a longer one is not sent, and its
/// followers find the event at their next look instead.
const MAX_PAYLOAD: usize = 7_900;

/// How many notices a slow subscriber may fall behind by before it is told it lagged (and then
/// looks at the store).
const NOTICE_BUFFER: usize = 1024;

/// The payload of a notice: a kind letter, the generation (for a change), and the task as
/// `<tenant length>:<tenant><id>`, so neither part needs escaping.
pub(crate) fn encode_notice(
    kind: char,
    generation: u64,
    tenant: &str,
    id: &TaskId,
) -> Option<String> {
    let payload = format!("{kind}{generation}:{}:{tenant}{id}", tenant.len());
    (payload.len() < MAX_PAYLOAD).then_some(payload)
}

/// Reads a payload written by [`encode_notice`].
pub(crate) fn decode_notice(payload: &str) -> Option<Notice> {
    let kind = payload.chars().next()?;
    let rest = &payload[kind.len_utf8()..];
    let (generation, rest) = rest.split_once(':')?;
    let (length, rest) = rest.split_once(':')?;
    let length: usize = length.parse().ok()?;
    let tenant = rest.get(..length)?;
    let id = rest.get(length..)?;
    let task = TaskRef {
        tenant: tenant.to_owned(),
        id: TaskId::new(id),
    };
    match kind {
        'g' => Some(Notice::Changed {
            task,
            generation: generation.parse().ok()?,
        }),
        'c' => Some(Notice::CancelRequested(task)),
        _ => None,
    }
}

/// Where a store's pushed notices fan out to every subscriber in the process. The listener
/// that feeds it starts with the first subscriber.
#[derive(Default)]
pub(crate) struct NoticeHub {
    sender: OnceLock<broadcast::Sender<Notice>>,
}

impl NoticeHub {
    /// A receiver of notices, and whether the caller must start the listener (the first time).
    pub(crate) fn subscribe(&self) -> (broadcast::Receiver<Notice>, bool) {
        let mut first = false;
        let sender = self.sender.get_or_init(|| {
            first = true;
            broadcast::channel(NOTICE_BUFFER).0
        });
        (sender.subscribe(), first)
    }

    /// Hands a notice to every subscriber.
    pub(crate) fn publish(&self, notice: Notice) {
        if let Some(sender) = self.sender.get() {
            let _ = sender.send(notice);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_read_back_as_written_whatever_the_names_hold() {
        for (tenant, id) in [("", "t-1"), ("acme", "t:2"), ("a:b:c", "x"), ("é", "ü:1")] {
            let payload = encode_notice('g', 42, tenant, &TaskId::new(id)).expect("short enough");
            assert_eq!(
                decode_notice(&payload),
                Some(Notice::Changed {
                    task: TaskRef {
                        tenant: tenant.into(),
                        id: TaskId::new(id)
                    },
                    generation: 42
                })
            );
            let payload = encode_notice('c', 0, tenant, &TaskId::new(id)).expect("short enough");
            assert!(
                matches!(decode_notice(&payload), Some(Notice::CancelRequested(t)) if t.id.as_str() == id)
            );
        }
        assert_eq!(decode_notice("x1:0:t"), None);
        assert_eq!(decode_notice("g1:9:short"), None);
        assert!(encode_notice('g', 1, &"t".repeat(8000), &TaskId::new("x")).is_none());
    }
}
