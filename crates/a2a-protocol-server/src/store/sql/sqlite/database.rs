//! The SQLite database behind a store: where it is, its connections, and where each statement
//! runs. Every write of this process goes to one writer thread (see [`super::group_commit`]);
//! reads run on a few connections of their own, on tokio's blocking threads. A database in
//! memory has only the writer's connection, which then serves reads too.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use percent_encoding::percent_decode_str;
use rusqlite::{Connection, OpenFlags, OptionalExtension as _, TransactionBehavior};
use tokio::sync::Semaphore;

use super::group_commit::GroupWriter;
use super::{CHECKPOINT_PAGES, classify, migrate};
use crate::store::{SqlStoreOptions, StoreError, TaskWrite, WriteOutcome};

/// Where the database is.
#[derive(Debug, Clone)]
enum Location {
    File(PathBuf),
    Memory,
}

impl Location {
    /// Reads `sqlite://PATH`, `sqlite:PATH`, `sqlite::memory:` or a plain path, with an
    /// optional `?mode=rwc|rw|memory`. The file is created when missing.
    fn parse(url: &str) -> Result<Self, StoreError> {
        let rest = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut memory = path == ":memory:";
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            match pair {
                "mode=memory" => memory = true,
                "mode=rwc" | "mode=rw" => {}
                other => {
                    return Err(StoreError::Backend(
                        format!(
                            "the SQLite URL option `{other}` is not supported: \
                             use sqlite://PATH (created when missing) or sqlite::memory:"
                        )
                        .into(),
                    ));
                }
            }
        }
        if memory {
            return Ok(Self::Memory);
        }
        let path = percent_decode_str(path).decode_utf8().map_err(|_| {
            StoreError::Backend(
                format!("the SQLite URL {url:?} is not valid UTF-8 once decoded").into(),
            )
        })?;
        if path.is_empty() {
            return Err(StoreError::Backend(
                format!("the SQLite URL {url:?} names no file: use sqlite://PATH").into(),
            ));
        }
        Ok(Self::File(PathBuf::from(path.as_ref())))
    }

    fn connect(&self, busy_timeout: Duration) -> Result<Connection, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = match self {
            Self::File(path) => Connection::open_with_flags(path, flags),
            Self::Memory => Connection::open_in_memory_with_flags(flags),
        }
        .map_err(classify)?;
        connection.busy_timeout(busy_timeout).map_err(classify)?;
        Ok(connection)
    }
}

/// A store's database: the writer thread, and the connections reads run on.
pub(super) struct Database {
    writer: GroupWriter,
    /// `None` for a database in memory, which only the writer's connection can see.
    readers: Option<Arc<Readers>>,
}

impl Database {
    /// Opens the database at `url`, applies migrations and checks that it is opened as it was
    /// first opened (tenant-aware or not).
    pub(super) async fn open(url: &str, options: &SqlStoreOptions) -> Result<Self, StoreError> {
        let location = Location::parse(url)?;
        let busy_timeout = options.busy_timeout;
        let tenant_aware = options.tenant_aware;
        let writer_location = location.clone();
        let connection = tokio::task::spawn_blocking(move || {
            let mut connection = writer_location.connect(busy_timeout)?;
            // WAL lets reads run beside the writer; FULL makes every commit an fsync of the
            // log, so an answered write survives a power loss.
            connection
                .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
                .map_err(classify)?;
            connection
                .pragma_update(None, "wal_autocheckpoint", CHECKPOINT_PAGES)
                .map_err(classify)?;
            migrate::run(&mut connection)?;
            check_mode(&mut connection, tenant_aware)?;
            Ok::<_, StoreError>(connection)
        })
        .await
        .map_err(stopped)??;
        let readers = match location {
            Location::File(_) => Some(Arc::new(Readers {
                location,
                idle: Mutex::default(),
                permits: Arc::new(Semaphore::new(
                    usize::try_from(options.max_connections.max(1)).unwrap_or(1),
                )),
                acquire_timeout: options.acquire_timeout,
                busy_timeout,
            })),
            Location::Memory => None,
        };
        Ok(Self {
            writer: GroupWriter::start(connection, busy_timeout)?,
            readers,
        })
    }

    /// Runs `read` on a connection of the read pool.
    pub(super) async fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        match &self.readers {
            Some(readers) => readers.clone().run(read).await,
            None => {
                self.writer
                    .exclusive(move |connection| read(connection))
                    .await
            }
        }
    }

    /// Runs `write` in a transaction of its own on the writer's connection: committed when it
    /// returns `Ok`, rolled back when it returns an error.
    pub(super) async fn write<T: Send + 'static>(
        &self,
        write: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.writer
            .exclusive(move |connection| {
                let tx = connection
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(classify)?;
                let written = write(&tx)?;
                tx.commit().map_err(classify)?;
                Ok(written)
            })
            .await
    }

    /// A task write, committed with the others waiting beside it.
    pub(super) async fn write_task(
        &self,
        tenant: &str,
        write: &TaskWrite<'_>,
    ) -> Result<WriteOutcome, StoreError> {
        self.writer.write(tenant, write).await
    }

    #[cfg(test)]
    pub(super) fn writer(&self) -> &GroupWriter {
        &self.writer
    }
}

/// The read connections: opened when first needed, at most `permits` at once.
struct Readers {
    location: Location,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
    acquire_timeout: Duration,
    busy_timeout: Duration,
}

impl Readers {
    async fn run<T: Send + 'static>(
        self: Arc<Self>,
        read: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let permit =
            tokio::time::timeout(self.acquire_timeout, self.permits.clone().acquire_owned())
                .await
                .map_err(|_| {
                    StoreError::Busy(format!(
                        "no SQLite connection came free within {:?}",
                        self.acquire_timeout
                    ))
                })?
                .map_err(|_| StoreError::Backend("the SQLite store is closed".into()))?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let idle = self
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            let connection = match idle {
                Some(connection) => connection,
                None => self.location.connect(self.busy_timeout)?,
            };
            let answer = read(&connection);
            self.idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(connection);
            answer
        })
        .await
        .map_err(stopped)?
    }
}

fn stopped(error: tokio::task::JoinError) -> StoreError {
    StoreError::Backend(format!("a SQLite statement stopped before it answered: {error}").into())
}

/// Records whether the store partitions tasks by tenant the first time it is opened, and
/// refuses to open it the other way later: a plain reader of a tenant-aware store would miss
/// every tenant's tasks but the empty one's.
fn check_mode(connection: &mut Connection, tenant_aware: bool) -> Result<(), StoreError> {
    let wanted = if tenant_aware { "true" } else { "false" };
    let tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(classify)?;
    let recorded: Option<String> = tx
        .query_row(
            "SELECT value FROM a2a_store_settings WHERE name = 'tenant_aware'",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(classify)?;
    let recorded = match recorded {
        Some(recorded) => recorded,
        None => {
            // A store from before modes were recorded: tasks under a tenant name mean it was
            // served tenant-aware.
            let tenanted = tx
                .query_row(
                    "SELECT 1 FROM a2a_tasks WHERE tenant <> '' LIMIT 1",
                    [],
                    |_| Ok(()),
                )
                .optional()
                .map_err(classify)?
                .is_some();
            let mode = if tenanted { "true" } else { wanted };
            tx.execute(
                "INSERT INTO a2a_store_settings (name, value) VALUES ('tenant_aware', ?1)",
                [mode],
            )
            .map_err(classify)?;
            mode.to_owned()
        }
    };
    tx.commit().map_err(classify)?;
    crate::store::sql::opened_as_recorded(&recorded, tenant_aware)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::Location;
    use crate::store::{SqlStoreOptions, SqliteTaskStore, StoreError};

    /// A database in memory is served by the writer's one connection, reads included: it
    /// keeps the whole store contract, plain and tenant-aware.
    #[cfg(feature = "testing")]
    #[tokio::test]
    async fn a_database_in_memory_keeps_the_store_contract() {
        use crate::store::conformance::Conformance;
        for tenant_aware in [false, true] {
            let options = SqlStoreOptions::default().with_tenant_aware(tenant_aware);
            let store = SqliteTaskStore::open_with("sqlite::memory:", &options)
                .await
                .unwrap();
            let report = Conformance::new(Arc::new(store))
                .with_tenant_aware(tenant_aware)
                .run()
                .await
                .unwrap_or_else(|failure| panic!("tenant-aware {tenant_aware}: {failure}"));
            println!("in memory, tenant-aware {tenant_aware}: {report:?}");
        }
    }

    /// Reads wait for a free connection up to the acquire timeout, then answer "busy" (which
    /// a client may retry) rather than opening more connections than allowed.
    #[tokio::test]
    async fn a_read_finding_every_connection_taken_answers_busy() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
        let options = SqlStoreOptions::default()
            .with_max_connections(1)
            .with_acquire_timeout(Duration::from_millis(50));
        let store = Arc::new(SqliteTaskStore::open_with(&url, &options).await.unwrap());
        let (started, running) = tokio::sync::oneshot::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let holder = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .database
                    .read(move |_| {
                        let _ = started.send(());
                        let _ = released.recv();
                        Ok(())
                    })
                    .await
            })
        };
        running.await.unwrap();
        let second = store.database.read(|_| Ok(())).await;
        assert!(matches!(second, Err(StoreError::Busy(_))), "{second:?}");
        release.send(()).unwrap();
        holder.await.unwrap().unwrap();
        store.database.read(|_| Ok(())).await.expect("free again");
    }

    /// A migration whose recorded script differs from this build's stops the store from
    /// opening, saying why, instead of serving a schema it does not know.
    #[tokio::test]
    async fn a_migration_changed_since_it_was_applied_stops_the_store_from_opening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        let url = format!("sqlite://{}", path.display());
        drop(SqliteTaskStore::open(&url).await.unwrap());
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute(
                "UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 3",
                [],
            )
            .unwrap();
        let error = SqliteTaskStore::open(&url).await.unwrap_err().to_string();
        assert!(
            error.contains("migration 3 (task callers)") && error.contains("different script"),
            "{error}"
        );
    }

    #[test]
    fn urls_name_a_file_or_memory() {
        for (url, file) in [
            (
                "sqlite:///var/lib/agent/tasks.db",
                Some("/var/lib/agent/tasks.db"),
            ),
            ("sqlite://tasks.db", Some("tasks.db")),
            ("sqlite:tasks.db?mode=rwc", Some("tasks.db")),
            ("sqlite:///tmp/a%20b.db", Some("/tmp/a b.db")),
            ("/tmp/plain.db", Some("/tmp/plain.db")),
            ("sqlite::memory:", None),
            ("sqlite://x.db?mode=memory", None),
        ] {
            match (Location::parse(url).unwrap(), file) {
                (Location::File(path), Some(file)) => {
                    assert_eq!(path.to_str(), Some(file), "{url}")
                }
                (Location::Memory, None) => {}
                (other, _) => panic!("{url} read as {other:?}"),
            }
        }
        for bad in [
            "sqlite://",
            "sqlite://x.db?mode=ro",
            "sqlite://x.db?vfs=unix",
        ] {
            let error = Location::parse(bad).unwrap_err().to_string();
            assert!(error.contains("sqlite://PATH"), "{bad}: {error}");
        }
    }
}
