//! Test support shared by the integration tests: a fault-injecting TCP proxy, servers on
//! 127.0.0.1:0, and a counting agent.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod proxy;
pub mod support;
