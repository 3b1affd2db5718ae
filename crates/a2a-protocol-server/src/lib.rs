//! Building A2A v1.0 agents.
//!
//! This crate grows into the server framework: the agent executor, the request handler, task
//! stores and the JSON-RPC and HTTP+JSON bindings. Today it holds nothing beyond its name.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use a2a_protocol_types as types;
