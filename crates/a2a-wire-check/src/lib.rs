//! Test support: every JSON body a server writes, checked member by member against the A2A
//! v1.0.1 proto, so that a field of a later version (or any other stray member) fails the test
//! that made the server write it, naming its JSON path.
//!
//! Strict ProtoJSON readers (Go's `protojson`, Python's `json_format.Parse`, Java's
//! `JsonFormat.parser()`, the conformance suite's schema) refuse a member that is not a field
//! of its message, so one stray member makes a whole answer unreadable to them.
//!
//! ```
//! use a2a_wire_check::Schema;
//!
//! let task = serde_json::json!({"id": "t", "status": {"state": "TASK_STATE_WORKING"}, "generation": "2"});
//! let found = Schema::v1_0().check("lf.a2a.v1.Task", &task, "$");
//! assert_eq!(found[0].path, "$.generation");
//! ```
//!
//! Servers: wrap the routes in [`record`] with a [`Recorder`]
//! (`axum::middleware::from_fn_with_state(recorder.clone(), a2a_wire_check::record)`), then
//! [`Recorder::assert_clean`]. Webhooks: [`Recorder::check_push`] each body received.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod bodies;
mod record;
mod schema;

pub use bodies::{Asked, check_body, check_event, check_push_body};
pub use record::{Recorder, record};
pub use schema::{PACKAGE, Schema, Violation};
