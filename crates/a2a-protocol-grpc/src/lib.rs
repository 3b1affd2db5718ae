//! The A2A v1.0 gRPC binding's wire model: the protobuf messages and `A2AService` stubs of
//! `lf.a2a.v1` (generated from the specification's `a2a.proto` by `tonic-prost-build`, and
//! checked in so that building needs no protobuf compiler), and lossless conversions between
//! them and the public model in [`a2a_protocol_types`].
//!
//! Applications do not use this crate directly: the server and client crates serve and call
//! gRPC with it (their `grpc` features), and speak [`a2a_protocol_types`] to you.
//!
//! ```
//! use a2a_protocol_grpc::pb;
//! use a2a_protocol_types::{Message, Task, TaskState, TaskStatus};
//!
//! let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Completed));
//! task.history.push(Message::user_text("hello"));
//! let wire = pb::Task::from(task.clone());
//! assert_eq!(wire.status.as_ref().map(|s| s.state), Some(pb::TaskState::Completed as i32));
//! assert_eq!(Task::try_from(wire).unwrap(), task);
//! ```
//!
//! What the two forms cannot both say: proto3 has no "unset" for a plain string or list, so an
//! empty string or list reads back as `None` (as it does from JSON); numbers in free-form
//! metadata travel as doubles (`google.protobuf.Struct`), so an integral value comes back as
//! an integer and integers beyond 2^53 lose precision; and `generation` (from A2A v1.1) has no
//! field in the v1.0 proto, so it reads back as 0.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod convert;
pub mod status;

pub use convert::ProtoError;

/// The generated messages, enums and `A2AService` client and server stubs of `lf.a2a.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    include!("generated/lf.a2a.v1.rs");
}
