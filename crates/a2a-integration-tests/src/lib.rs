//! Test support shared by the integration tests: servers on 127.0.0.1:0, a counting agent
//! and a webhook receiver.
//! The fault-injecting proxy they put in front of servers is `a2a_test_kit::fault_proxy`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod fuzz;
pub mod support;
pub mod webhook;

/// The guide's examples (`docs/`) compile and run as doctests, so the guide stays true.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../../../docs/idempotency.md")]
    struct Idempotency;
    #[doc = include_str!("../../../docs/keys.md")]
    struct Keys;
    #[doc = include_str!("../../../docs/stores.md")]
    struct Stores;
    #[doc = include_str!("../../../docs/postgres.md")]
    struct Postgres;
    #[doc = include_str!("../../../docs/client-retries.md")]
    struct ClientRetries;
    #[doc = include_str!("../../../docs/delegation.md")]
    struct Delegation;
    #[doc = include_str!("../../../docs/security.md")]
    struct Security;
    #[doc = include_str!("../../../docs/embedding.md")]
    struct Embedding;
    #[doc = include_str!("../../../docs/grpc.md")]
    struct Grpc;
    #[doc = include_str!("../../../docs/push.md")]
    struct Push;
}
