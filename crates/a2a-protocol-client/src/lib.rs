//! Calling A2A v1.0 agents.
//!
//! This crate grows into the client: discovery, transports, streaming, the retry policy and
//! delegation. Today it holds nothing beyond its name.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use a2a_protocol_types as types;
