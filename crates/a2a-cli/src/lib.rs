//! The parts of the `a2a` command that other programs can use too.
//!
//! The command itself is the `a2a` binary (`a2a --help`). This library holds the
//! [`fault_proxy`] that `a2a demo` uses to break connections after a request has gone through,
//! so tests and benchmarks can produce the same ambiguous failures.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod fault_proxy;
