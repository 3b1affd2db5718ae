//! Task stores: where tasks and idempotency keys live.
//!
//! A store is three contracts, each as small as what it promises:
//! - [`TaskStore`]: tasks read and listed, the one atomic write, and the idempotency key
//!   index. Every bundled store honours idempotency keys; a custom store does not until it
//!   implements [`TaskStore::claim_idempotency_key`] and
//!   [`TaskStore::release_idempotency_key`] and overrides [`TaskStore::supports_idempotency`].
//!   That default is deliberate: a store without the index produces a missing card
//!   advertisement and refused keyed sends, never a send that quietly runs twice.
//! - [`PushStore`]: push notification configs and the outbox of their deliveries.
//! - [`Coordination`]: what several server processes sharing one store agree on.
//!
//! A store offers the last two through [`TaskStore::capabilities`].
//!
//! Two obligations for an implementation of the key index:
//! - the claim is atomic: two racing claims of one key in one scope have exactly one winner;
//! - a key is never deleted with its task: a retry after the task is gone must find the key
//!   and get `TaskNotFound`, not a free key and a second run.

mod config;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod conformance;
mod coordination;
mod error;
pub(crate) mod footprint;
mod key_index;
mod keys;
mod memory;
pub(crate) mod metered;
mod non_atomic;
mod page_token;
mod push_configs;
mod push_outbox;
mod push_store;
mod query;
mod retention;
mod shard;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
mod task_store;
mod tenant;
mod write;

pub use config::InMemoryStoreConfig;
/// The in-memory store's settings under their earlier name, [`InMemoryStoreConfig`].
pub type TaskStoreConfig = InMemoryStoreConfig;
pub use coordination::{Coordination, Notice, TaskRef};
pub use error::{STORE_RETRY_AFTER, StoreError};
pub use keys::{ClaimOutcome, KeyClaim, KeyScope};
pub use memory::InMemoryTaskStore;
pub use non_atomic::{KeyFirstStore, NonAtomicWrites};
pub use page_token::PageCursor;
pub use push_configs::PushConfigSaved;
pub(crate) use push_outbox::epoch_millis;
pub use push_outbox::{DeliverySettled, PushDelivery};
pub use push_store::PushStore;
pub use query::{TaskPage, TaskQuery};
pub use retention::{PurgeReport, Retention, RetentionPolicy, RetentionSweeper};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use sql::SqlStoreOptions;
#[cfg(feature = "postgres")]
pub use sql::postgres::PostgresTaskStore;
#[cfg(feature = "sqlite")]
pub use sql::sqlite::SqliteTaskStore;
pub(crate) use task_store::Offers;
pub use task_store::{Capabilities, TaskStore, TaskStoreExt};
pub(crate) use write::head_of;
pub use write::{Loaded, StoredTask, TaskWrite, WriteOutcome};
