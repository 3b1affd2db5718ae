//! Calling A2A v1.0 agents.
//!
//! Build an [`A2aClient`] with [`ClientBuilder`] from an agent card (discovered from the
//! agent's base URL) or for a bare endpoint, and call any of the eleven operations over
//! JSON-RPC or HTTP+JSON. Streaming calls return a `futures::Stream` of typed events.
//!
//! Nothing is ever re-sent unless a [`RetryPolicy`] is set; with one, only what cannot run
//! twice is re-sent after an ambiguous failure (see [`retry`]). A send that carries an
//! idempotency key is safe to re-send to an agent that honours the key: the agent answers the
//! retry with the task the first attempt created.
//!
//! ```no_run
//! use a2a_protocol_client::{ClientBuilder, RetryPolicy};
//! use a2a_protocol_types::idempotency::{generate_key, set_key};
//! use a2a_protocol_types::{Message, SendMessageRequest};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = ClientBuilder::discover("http://127.0.0.1:8080")
//!     .await?
//!     .with_retry_policy(RetryPolicy::default())
//!     .build()?;
//! let mut message = Message::user_text("summarise the incident");
//! set_key(&mut message, &generate_key())?;
//! let answer = client.send_message(SendMessageRequest::new(message)).await?;
//! # let _ = answer;
//! # Ok(())
//! # }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod auth;
mod builder;
mod client;
pub mod delegation;
mod error;
mod operation;
pub mod retry;
pub mod sse;
mod transport;

pub use a2a_protocol_types as types;
pub use builder::{ClientBuilder, fetch_card};
pub use client::{A2aClient, EventStream};
pub use error::{ClientError, FailureClass, Phase};
pub use operation::Operation;
pub use retry::RetryPolicy;
pub use transport::{Answer, Binding, Call, RequestHook, Transport, TransportRequest};
