//! SQLite stores: WAL mode, a busy timeout, and full fsync so a committed claim survives a
//! crash. Several processes may share one file.

use std::str::FromStr;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::{SqlStoreOptions, sql_store};

mod group_commit;
#[cfg(test)]
mod plan_tests;
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

/// SQLite cannot push notices: followers in other processes look at the file again.
async fn announce(
    _tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    _payload: &str,
) -> Result<(), sqlx::Error> {
    Ok(())
}

fn notices(
    core: &statements::SqlCore,
) -> Option<tokio::sync::broadcast::Receiver<crate::store::Notice>> {
    let _unused_here = &core.notices;
    None
}

/// How often processes sharing the file look for what the others did: a local file answers
/// such a query in microseconds.
const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// SQLite task writes go to the group writer, when the store has one (a database in memory
/// has none: a second connection would open another database).
async fn group_write(
    core: &statements::SqlCore,
    write: &crate::store::TaskWrite<'_>,
) -> Result<Option<crate::store::WriteOutcome>, StoreError> {
    match &core.group {
        Some(group) => group
            .write(core.task_tenant(write.tenant), write)
            .await
            .map(Some),
        None => Ok(None),
    }
}

/// Starts the group writer on the pool's database file, unless the database lives in memory.
async fn open_group(
    core: &statements::SqlCore,
) -> Result<Option<group_commit::GroupWriter>, StoreError> {
    use sqlx::Row as _;
    let file: Option<String> =
        sqlx::query("SELECT file FROM pragma_database_list WHERE name = 'main'")
            .fetch_optional(&core.pool)
            .await
            .map_err(classify)?
            .map(|row| row.try_get(0))
            .transpose()
            .map_err(classify)?;
    match file.filter(|file| !file.is_empty()) {
        Some(file) => group_commit::GroupWriter::start(
            std::path::Path::new(&file),
            core.busy_timeout,
            core.writer.clone(),
        )
        .map(Some),
        None => Ok(None),
    }
}

mod statements {
    crate::store::sql::sql_core!(
        sqlx::Sqlite,
        sqlx::SqlitePool,
        super::classify,
        migrations: "./migrations/sqlite",
        one_writer: true,
        pushes: false,
        announce: super::announce,
        one_statement: super::group_write,
        group: Option<super::group_commit::GroupWriter>,
        open_group: super::open_group
    );
    crate::store::sql::sql_coordination!(sqlx::Sqlite, super::classify, announce: super::announce);
}

/// The log grows to about this many pages (4 KiB each, so 40 MiB) before a commit copies it
/// into the database file. SQLite's default, 1 000, made the writer thread checkpoint every
/// few hundred keyed sends; a longer log writes a page that changes often (an index's root,
/// a table's last page) into the file once per checkpoint instead of ten times. Recovery
/// replays at most this much log after a crash.
pub(super) const CHECKPOINT_PAGES: u32 = 10_000;

async fn connect(url: &str, options: &SqlStoreOptions) -> Result<SqlitePool, StoreError> {
    let connect = SqliteConnectOptions::from_str(url)
        .map_err(|e| StoreError::Backend(Box::new(e)))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .pragma("wal_autocheckpoint", CHECKPOINT_PAGES.to_string())
        .busy_timeout(options.busy_timeout);
    SqlitePoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .connect_with(connect)
        .await
        .map_err(classify)
}

sql_store!(
    /// Tasks and idempotency keys in a SQLite database. Tasks share one namespace whatever the
    /// request's tenant unless the store is opened tenant-aware
    /// ([`SqlStoreOptions::with_tenant_aware`](crate::store::SqlStoreOptions::with_tenant_aware));
    /// keys are scoped by tenant and caller. Nothing is deleted until
    /// [`Retention::purge_expired`](crate::store::Retention::purge_expired) runs.
    SqliteTaskStore,
    pool: SqlitePool,
    url: "sqlite:///var/lib/agent/tasks.db",
    doctest: "",
    setup: "# let dir = tempfile::tempdir()?;\n# let url = format!(\"sqlite://{}\", dir.path().join(\"tasks.db\").display());"
);
