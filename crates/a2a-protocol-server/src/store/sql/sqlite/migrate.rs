//! The SQLite schema's migrations, applied in order, each in its own transaction.
//!
//! They are recorded as sqlx's migrator records them (`_sqlx_migrations`: version,
//! description, SHA-384 of the script), which earlier releases used on this file: a database
//! they migrated opens here, and one migrated here opens there.

use rusqlite::{Connection, OptionalExtension as _, params};
use sha2::{Digest as _, Sha384};

use super::classify;
use crate::store::StoreError;

/// One script of `migrations/sqlite`.
struct Migration {
    version: i64,
    /// The file name's words, as sqlx records them.
    description: &'static str,
    sql: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "tasks and idempotency keys",
        sql: include_str!("../../../../migrations/sqlite/0001_tasks_and_idempotency_keys.sql"),
    },
    Migration {
        version: 2,
        description: "versioned tasks and turns",
        sql: include_str!("../../../../migrations/sqlite/0002_versioned_tasks_and_turns.sql"),
    },
    Migration {
        version: 3,
        description: "task callers",
        sql: include_str!("../../../../migrations/sqlite/0003_task_callers.sql"),
    },
    Migration {
        version: 4,
        description: "push notification configs",
        sql: include_str!("../../../../migrations/sqlite/0004_push_notification_configs.sql"),
    },
    Migration {
        version: 5,
        description: "push outbox",
        sql: include_str!("../../../../migrations/sqlite/0005_push_outbox.sql"),
    },
    Migration {
        version: 6,
        description: "listing indexes in list order",
        sql: include_str!("../../../../migrations/sqlite/0006_listing_indexes_in_list_order.sql"),
    },
];

/// Applies the migrations `connection`'s database has not had. A migration recorded as
/// failed, or whose script differs from the one recorded, stops the store from opening: the
/// schema is not what this build expects.
pub(super) fn run(connection: &mut Connection) -> Result<(), StoreError> {
    connection
        .execute_batch(
            "CREATE TABLE IF NOT EXISTS _sqlx_migrations ( \
               version BIGINT PRIMARY KEY, \
               description TEXT NOT NULL, \
               installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
               success BOOLEAN NOT NULL, \
               checksum BLOB NOT NULL, \
               execution_time BIGINT NOT NULL)",
        )
        .map_err(classify)?;
    for migration in MIGRATIONS {
        let checksum = Sha384::digest(migration.sql.as_bytes()).to_vec();
        // Immediate: of two processes opening one new file, the second waits, then sees the
        // first's record.
        let tx = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(classify)?;
        let recorded: Option<(bool, Vec<u8>)> = tx
            .query_row(
                "SELECT success, checksum FROM _sqlx_migrations WHERE version = ?1",
                [migration.version],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(classify)?;
        match recorded {
            Some((true, recorded)) if recorded == checksum => continue,
            Some((true, _)) => {
                return Err(schema_error(
                    migration,
                    "was applied from a different script",
                ));
            }
            Some((false, _)) => {
                return Err(schema_error(migration, "failed part way in an earlier run"));
            }
            None => {}
        }
        let started = std::time::Instant::now();
        tx.execute_batch(migration.sql).map_err(classify)?;
        tx.execute(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (?1, ?2, TRUE, ?3, ?4)",
            params![
                migration.version,
                migration.description,
                checksum,
                i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX)
            ],
        )
        .map_err(classify)?;
        tx.commit().map_err(classify)?;
    }
    Ok(())
}

fn schema_error(migration: &Migration, what: &str) -> StoreError {
    StoreError::Backend(
        format!(
            "migration {} ({}) of this database {what}: the schema is not the one this build \
             expects; open it with the release that wrote it, or restore a backup",
            migration.version, migration.description
        )
        .into(),
    )
}

#[cfg(test)]
mod tests {
    /// sqlx's migrator, which earlier releases ran, accepts what this one recorded, and this
    /// one opens a database sqlx migrated without applying anything again.
    #[tokio::test]
    async fn migrations_are_recorded_as_sqlx_records_them() {
        use std::str::FromStr as _;

        let dir = tempfile::tempdir().unwrap();
        for first_by_sqlx in [false, true] {
            let path = dir.path().join(format!("{first_by_sqlx}.db"));
            let url = format!("sqlite://{}", path.display());
            let options = sqlx::sqlite::SqliteConnectOptions::from_str(&url)
                .unwrap()
                .create_if_missing(true);
            let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
            let migrator = sqlx::migrate!("./migrations/sqlite");
            if first_by_sqlx {
                migrator.run(&pool).await.unwrap();
            }
            crate::store::SqliteTaskStore::open(&url).await.unwrap();
            migrator
                .run(&pool)
                .await
                .expect("sqlx finds every migration applied, with the script it has");
            let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
                .fetch_one(&pool)
                .await
                .unwrap();
            assert_eq!(applied, 6, "each migration once");
        }
    }
}
