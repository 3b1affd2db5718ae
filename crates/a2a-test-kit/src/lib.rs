//! Parts for testing A2A agents and clients over real connections, shared by this workspace's
//! tests and `a2a demo`, and free of any of its binaries:
//! - [`fault_proxy`]: a proxy that breaks connections after a request has gone through, so a
//!   client meets the ambiguous failure for real.
//!
//! The store contract as checks is the server's `store::conformance` (feature `testing`).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod fault_proxy;
