//! The A2A v1.0 wire model.
//!
//! Every object of the A2A specification and `a2a.proto`, serialized as ProtoJSON: camelCase
//! fields, enums by their proto names (`TASK_STATE_COMPLETED`), `oneof` members as wrapper keys,
//! unset fields omitted, timestamps RFC 3339. Reading is liberal (`null`, `""` and `[]` for unset
//! fields, v0.3 enum spellings); writing is strict.
//!
//! Beside the protocol live the data of three extensions: [`idempotency`] (exactly-once sends),
//! [`lease`] and [`budget`]. This crate does no I/O.
//!
//! ```
//! use a2a_protocol_types::idempotency::{generate_key, key_of, set_key};
//! use a2a_protocol_types::message::Message;
//!
//! let mut message = Message::user_text("summarise the incident");
//! let key = generate_key();
//! set_key(&mut message, &key)?;
//! assert_eq!(key_of(&message)?, Some(key.as_str()));
//! # Ok::<(), a2a_protocol_types::idempotency::KeyError>(())
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod ids;
mod proto_enum;
mod serde_util;

pub mod agent_card;
pub mod budget;
pub mod error;
pub mod events;
pub mod extensions;
pub mod idempotency;
pub mod jsonrpc;
pub mod lease;
pub mod message;
pub mod push;
pub mod requests;
pub mod security;
pub mod task;
pub mod timestamp;
pub mod trace;

/// The README's code blocks compile and pass as doctests, so the README stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// Free-form JSON object (`google.protobuf.Struct`), used for every `metadata` field.
pub type Metadata = serde_json::Map<String, serde_json::Value>;

pub use agent_card::{AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill};
pub use error::{A2aError, ErrorKind};
pub use events::{StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent};
pub use extensions::AgentExtension;
pub use ids::{ArtifactId, ContextId, MessageId, TaskId};
pub use message::{Message, MessageRole, Part, PartContent, Role};
pub use proto_enum::UnknownEnumValue;
pub use requests::*;
pub use task::{Artifact, Task, TaskState, TaskStatus};
pub use timestamp::Timestamp;
