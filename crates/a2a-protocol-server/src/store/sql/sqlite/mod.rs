//! SQLite stores, on one driver, rusqlite: WAL mode, a busy timeout, and full fsync so a
//! committed claim survives a crash. Several processes may share one file.
//!
//! rusqlite rather than sqlx's SQLite driver, by measurement (`benches/sqlite_drivers.rs`):
//! sixteen reads of a task head at once took 230 µs against 392 µs, and a transaction of five
//! statements 236 µs against 468 µs, on the same file. sqlx sends each statement to a thread
//! of the connection's own and back; here a read runs on one of tokio's blocking threads and
//! every write on the store's writer thread.

mod coordinate;
mod database;
mod group_commit;
mod migrate;
#[cfg(test)]
mod plan_tests;
mod push;
mod retention;
mod statement;
mod tasks;

use rusqlite::Params;

use crate::store::{SqlStoreOptions, StoreError};
use database::Database;

/// The log grows to about this many pages (4 KiB each, so 40 MiB) before a commit copies it
/// into the database file. SQLite's default, 1 000, made the writer thread checkpoint every
/// few hundred keyed sends; a longer log writes a page that changes often (an index's root,
/// a table's last page) into the file once per checkpoint instead of ten times. Recovery
/// replays at most this much log after a crash.
const CHECKPOINT_PAGES: u32 = 10_000;

/// Tasks and idempotency keys in a SQLite database. Tasks share one namespace whatever the
/// request's tenant unless the store is opened tenant-aware
/// ([`SqlStoreOptions::with_tenant_aware`]); keys are scoped by tenant and caller. Nothing is
/// deleted until [`Retention::purge_expired`](crate::store::Retention::purge_expired) runs.
///
/// ```
/// use a2a_protocol_server::store::{SqliteTaskStore, TaskStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
/// let store = SqliteTaskStore::open(&url).await?;
/// assert!(store.supports_idempotency());
/// # Ok(())
/// # }
/// ```
pub struct SqliteTaskStore {
    database: Database,
    tenant_aware: bool,
}

impl std::fmt::Debug for SqliteTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteTaskStore")
            .field("tenant_aware", &self.tenant_aware)
            .finish_non_exhaustive()
    }
}

impl SqliteTaskStore {
    /// Opens the database at `url` (such as `sqlite:///var/lib/agent/tasks.db`, created when
    /// missing; `sqlite::memory:` for one that lives as long as the store) and applies
    /// migrations.
    ///
    /// ```
    /// use a2a_protocol_server::store::SqliteTaskStore;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = SqliteTaskStore::open("sqlite::memory:").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, &SqlStoreOptions::default()).await
    }

    /// Like [`Self::open`], with settings: tenancy, read connections and timeouts.
    ///
    /// ```
    /// use a2a_protocol_server::store::{SqlStoreOptions, SqliteTaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
    /// let options = SqlStoreOptions::default()
    ///     .with_tenant_aware(true) // each tenant's tasks apart
    ///     .with_max_connections(4);
    /// let store = SqliteTaskStore::open_with(&url, &options).await?;
    /// assert!(store.is_tenant_aware());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn open_with(url: &str, options: &SqlStoreOptions) -> Result<Self, StoreError> {
        Ok(Self {
            database: Database::open(url, options).await?,
            tenant_aware: options.tenant_aware,
        })
    }

    /// Whether each tenant's tasks are kept apart ([`SqlStoreOptions::tenant_aware`]).
    pub fn is_tenant_aware(&self) -> bool {
        self.tenant_aware
    }

    /// The tenant a task's rows are kept under: its own in a tenant-aware store, else `''`.
    fn task_tenant<'a>(&self, tenant: &'a str) -> &'a str {
        if self.tenant_aware { tenant } else { "" }
    }

    /// Runs one statement on the writer's connection, with the parameters `args` makes
    /// there (so times are read when the statement runs), and says how many rows it changed.
    async fn execute<P: Params>(
        &self,
        sql: &'static str,
        args: impl FnOnce() -> P + Send + 'static,
    ) -> Result<usize, StoreError> {
        self.database
            .write(move |tx| statement::execute(tx, sql, args()))
            .await
    }
}

/// Maps a SQLite error: BUSY and LOCKED are "try again".
fn classify(error: rusqlite::Error) -> StoreError {
    match error.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            StoreError::Busy(error.to_string())
        }
        _ => StoreError::Backend(Box::new(error)),
    }
}

/// A count or limit as SQLite's integer.
fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
