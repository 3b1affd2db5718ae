//! Building A2A v1.0 agents.
//!
//! Implement [`AgentExecutor`], hand it to a [`RequestHandler`] with a [`store::TaskStore`],
//! and serve it with [`A2aServer`] on JSON-RPC and HTTP+JSON (both on one port, or either
//! alone). Every bundled store honours the idempotency extension: a retried keyed send returns
//! the task the first attempt created, and the agent runs once (see [`idempotency`]).
//!
//! ```no_run
//! use a2a_protocol_server::agents::EchoAgent;
//! use a2a_protocol_server::{A2aServer, RequestHandler};
//!
//! # async fn run() -> std::io::Result<()> {
//! let handler = RequestHandler::builder(EchoAgent::new()).build();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! A2aServer::new(handler).serve(listener, std::future::pending()).await
//! # }
//! ```
//!
//! # Features
//!
//! None is on by default: the in-memory stores, both bindings, authentication with your own
//! verifiers, and metrics and tracing through their facades are always there.
//!
//! | feature | adds |
//! |---|---|
//! | `sqlite` | `store::SqliteTaskStore` (SQLite is bundled) |
//! | `postgres` | `store::PostgresTaskStore` |
//! | `jwt` | `auth::JwtVerifier`: JWT bearer tokens checked against a key or an issuer's JWKS |
//! | `tls` | `tls::TlsConfig`: HTTPS terminated by the server, and client certificates (mutual TLS) |
//! | `push` | push notification delivery: `RequestHandlerBuilder::with_push`, webhooks POSTed from the store's outbox |
//! | `otel` | request spans joined to the caller's trace in the OpenTelemetry context, for a `tracing-opentelemetry` layer to export |
//! | `testing` | `store::conformance`: the store contract as checks, for the tests of a store of your own |

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod agents;
pub mod auth;
mod bindings;
mod config;
mod connections;
#[doc(hidden)]
pub mod doctest;
mod embedding;
pub mod executor;
mod handler;
pub mod idempotency;
mod identity;
mod in_span;
mod network;
pub mod push;
mod runtime;
mod server;
pub mod store;
mod telemetry;
#[cfg(feature = "tls")]
pub mod tls;

/// Hashes maps keyed by task ids, which this server generates rather than its clients, so a
/// fast hash is safe there. (Keys clients choose take std's seeded SipHash.)
type TaskIdHasher = foldhash::fast::RandomState;

pub use a2a_protocol_types as types;
pub use config::{CallerResolver, ServerConfig};
pub use embedding::ServerHandle;
pub use executor::{AgentExecutor, CallerIdentity, CancelContext, EventSink, RequestContext};
pub use handler::{
    CallContext, EventStream, HandlerConfig, MAX_IDENTIFIER_BYTES, RequestHandler,
    RequestHandlerBuilder,
};
pub use server::A2aServer;
