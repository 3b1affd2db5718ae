//! Push notifications: webhooks a client registers for a task, and their delivery.
//!
//! A config is checked when it is created: an `http` or `https` URL whose host
//! resolves only to addresses a webhook may reach (public ones, or those in
//! [`PushSettings::allowed`]). Every event of the task is then written to the store's outbox
//! in the same write that records it, and a delivery worker (the `push` feature) POSTs it at
//! least once: retried with exponential backoff and jitter, in order per task and config, with
//! a delivery id that is the same on every attempt, until it is acknowledged or given up as a
//! dead letter.

mod address;
#[cfg(feature = "push")]
mod sender;
mod settings;
pub(crate) mod webhook;
#[cfg(feature = "push")]
pub(crate) mod worker;

pub use address::{AddressRange, AddressRangeError};
pub use settings::PushSettings;

/// The header carrying a config's `token`, as other A2A SDKs send and read it.
pub const NOTIFICATION_TOKEN_HEADER: &str = "X-A2A-Notification-Token";
/// The header carrying a notification's delivery id: the same on every attempt, so a receiver
/// drops duplicates by it.
pub const DELIVERY_ID_HEADER: &str = "A2A-Delivery-Id";
/// The header carrying the task generation of the event delivered, so a receiver can order a
/// task's events.
pub const TASK_GENERATION_HEADER: &str = "A2A-Task-Generation";
