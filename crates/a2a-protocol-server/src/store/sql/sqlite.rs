//! SQLite stores: WAL mode, a busy timeout, and full fsync so a committed claim survives a
//! crash. Several processes may share one file.

use std::str::FromStr;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::{SqlStoreOptions, sql_core, sql_store_impls};
use crate::store::StoreError;

/// Maps a SQLite error: BUSY and LOCKED (and pool or I/O trouble) are "try again".
fn classify(error: sqlx::Error) -> StoreError {
    let busy = match &error {
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(db) => db
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| matches!(code & 0xff, 5 | 6)),
        _ => false,
    };
    if busy {
        StoreError::Busy(error.to_string())
    } else {
        StoreError::Backend(Box::new(error))
    }
}

mod statements {
    super::sql_core!(sqlx::Sqlite, sqlx::SqlitePool, super::classify);
}

async fn connect(url: &str, options: &SqlStoreOptions) -> Result<SqlitePool, StoreError> {
    let connect = SqliteConnectOptions::from_str(url)
        .map_err(|e| StoreError::Backend(Box::new(e)))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(options.busy_timeout);
    SqlitePoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .connect_with(connect)
        .await
        .map_err(classify)
}

macro_rules! sqlite_store {
    ($(#[$doc:meta])* $name:ident, $tenant_aware:expr) => {
        $(#[$doc])*
        pub struct $name {
            core: statements::SqlCore,
        }

        impl $name {
            /// Opens (creating if missing) the database at `url`, such as
            /// `sqlite:///var/lib/agent/tasks.db` or `sqlite::memory:`, and applies migrations.
            pub async fn open(url: &str) -> Result<Self, StoreError> {
                Self::open_with(url, &SqlStoreOptions::default()).await
            }

            /// Like [`Self::open`], with connection settings.
            pub async fn open_with(url: &str, options: &SqlStoreOptions) -> Result<Self, StoreError> {
                Self::from_pool(connect(url, options).await?).await
            }

            /// Uses an existing pool and applies migrations.
            pub async fn from_pool(pool: SqlitePool) -> Result<Self, StoreError> {
                Ok(Self {
                    core: statements::SqlCore::new(pool, $tenant_aware).await?,
                })
            }

            /// The pool.
            pub fn pool(&self) -> &SqlitePool {
                &self.core.pool
            }
        }

        sql_store_impls!($name);
    };
}

sqlite_store!(
    /// Tasks and idempotency keys in a SQLite database. Tasks share one namespace whatever the
    /// request's tenant; keys are scoped by tenant and caller. Nothing is deleted until
    /// [`Retention::purge_expired`](crate::store::Retention::purge_expired) runs.
    SqliteTaskStore,
    false
);

sqlite_store!(
    /// Like [`SqliteTaskStore`], with each tenant's tasks kept apart.
    TenantAwareSqliteTaskStore,
    true
);
