//! PostgreSQL stores: several server processes behind a load balancer may share one database;
//! the claim stays atomic across them.

use sqlx::postgres::{PgPool, PgPoolOptions};

use super::{SqlStoreOptions, sql_core, sql_store_impls};
use crate::store::StoreError;

/// Maps a PostgreSQL error: serialization failures, deadlocks, lock timeouts, connection
/// limits and lost connections (and pool or I/O trouble) are "try again".
fn classify(error: sqlx::Error) -> StoreError {
    let busy = match &error {
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            matches!(
                code.as_ref(),
                "40001" | "40P01" | "55P03" | "53300" | "57P01" | "57P02" | "57P03"
            ) || code.starts_with("08")
        }),
        _ => false,
    };
    if busy {
        StoreError::Busy(error.to_string())
    } else {
        StoreError::Backend(Box::new(error))
    }
}

mod statements {
    super::sql_core!(sqlx::Postgres, sqlx::PgPool, super::classify);
}

macro_rules! postgres_store {
    ($(#[$doc:meta])* $name:ident, $tenant_aware:expr) => {
        $(#[$doc])*
        pub struct $name {
            core: statements::SqlCore,
        }

        impl $name {
            /// Connects to `url` (such as `postgres://user@host/db`) and applies migrations.
            pub async fn open(url: &str) -> Result<Self, StoreError> {
                Self::open_with(url, &SqlStoreOptions::default()).await
            }

            /// Like [`Self::open`], with connection settings.
            pub async fn open_with(url: &str, options: &SqlStoreOptions) -> Result<Self, StoreError> {
                let pool = PgPoolOptions::new()
                    .max_connections(options.max_connections)
                    .acquire_timeout(options.acquire_timeout)
                    .connect(url)
                    .await
                    .map_err(classify)?;
                Self::from_pool(pool).await
            }

            /// Uses an existing pool (for example one whose connections set a `search_path`)
            /// and applies migrations.
            pub async fn from_pool(pool: PgPool) -> Result<Self, StoreError> {
                Ok(Self {
                    core: statements::SqlCore::new(pool, $tenant_aware).await?,
                })
            }

            /// The pool.
            pub fn pool(&self) -> &PgPool {
                &self.core.pool
            }
        }

        sql_store_impls!($name);
    };
}

postgres_store!(
    /// Tasks and idempotency keys in PostgreSQL. Tasks share one namespace whatever the
    /// request's tenant; keys are scoped by tenant and caller. Nothing is deleted until
    /// [`Retention::purge_expired`](crate::store::Retention::purge_expired) runs.
    PostgresTaskStore,
    false
);

postgres_store!(
    /// Like [`PostgresTaskStore`], with each tenant's tasks kept apart.
    TenantAwarePostgresTaskStore,
    true
);
