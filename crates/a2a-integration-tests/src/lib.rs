//! Test support shared by the integration tests: servers on 127.0.0.1:0 and a counting agent.
//! The fault-injecting proxy they put in front of servers is `a2a_cli::fault_proxy`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod support;
