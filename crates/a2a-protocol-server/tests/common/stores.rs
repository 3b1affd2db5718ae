//! Every bundled store, each on its own temporary SQLite file or PostgreSQL schema.
#![allow(dead_code)]

use std::str::FromStr;
use std::sync::Arc;

use a2a_protocol_server::store::{
    ClaimOutcome, InMemoryStoreConfig, InMemoryTaskStore, KeyClaim, Loaded, PostgresTaskStore,
    Retention, SqlStoreOptions, SqliteTaskStore, StoreError, TaskPage, TaskQuery, TaskStore,
    TaskWrite, WriteOutcome,
};
use a2a_protocol_types::TaskId;
use sqlx::Executor;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

/// Stores `task` as it stands, through the one write every store has: created, or written over
/// the revision stored with the messages it adds (what a test that only wants a task in the
/// store needs; the server's own writes say more).
pub async fn put(
    store: &(impl TaskStore + ?Sized),
    tenant: &str,
    task: a2a_protocol_types::Task,
) -> Result<(), a2a_protocol_server::store::StoreError> {
    use a2a_protocol_server::store::{Loaded, TaskWrite, WriteOutcome};
    let task = Arc::new(task);
    let outcome = match store.load(tenant, &task.id, None).await? {
        Loaded::Missing => store.write(&TaskWrite::create(tenant, &task)).await?,
        Loaded::Changed(stored) | Loaded::Unchanged(stored) => {
            let added = task.history.len().saturating_sub(stored.task.history.len());
            let write = TaskWrite::update(tenant, &task, stored.revision).with_new_messages(added);
            store.write(&write).await?
        }
    };
    assert_eq!(outcome, WriteOutcome::Written, "task {} put", task.id);
    Ok(())
}

/// The settings of a tenant-aware SQL store.
fn tenanted() -> SqlStoreOptions {
    SqlStoreOptions::default().with_tenant_aware(true)
}

pub const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The test database's URL, or `None` when `A2A_TEST_POSTGRES_URL=skip` (the only way to skip).
pub fn postgres_url() -> Option<String> {
    match std::env::var("A2A_TEST_POSTGRES_URL") {
        Ok(url) if url == "skip" => None,
        Ok(url) => Some(url),
        Err(_) => Some(DEFAULT_POSTGRES_URL.to_owned()),
    }
}

/// A fresh schema of the test database, dropped by [`PgSchema::drop_schema`].
pub struct PgSchema {
    pub url: String,
    pub name: String,
    admin: PgPool,
}

impl PgSchema {
    pub async fn create() -> Option<Self> {
        let url = postgres_url()?;
        let admin = PgPoolOptions::new()
            .max_connections(2)
            .connect(&url)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "PostgreSQL is not reachable at {url}: {e}. Start it with \
                 `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`, \
                 or set A2A_TEST_POSTGRES_URL=skip"
                )
            });
        let name = format!("a2a_test_{}", uuid::Uuid::new_v4().simple());
        admin
            .execute(format!("CREATE SCHEMA {name}").as_str())
            .await
            .expect("create schema");
        Some(Self { url, name, admin })
    }

    /// A pool whose connections work in this schema.
    pub async fn pool(&self) -> PgPool {
        let options = PgConnectOptions::from_str(&self.url)
            .expect("a PostgreSQL URL")
            .options([("search_path", self.name.as_str())]);
        PgPoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .expect("connect")
    }

    /// The URL of this schema, for another process.
    pub fn url_with_schema(&self) -> String {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}options=-c%20search_path%3D{}",
            self.url, self.name
        )
    }

    pub async fn drop_schema(self) {
        let _ = self
            .admin
            .execute(format!("DROP SCHEMA {} CASCADE", self.name).as_str())
            .await;
    }
}

/// A store under test, with what it needs kept alive.
pub struct StoreUnderTest {
    pub name: &'static str,
    pub store: Arc<dyn TaskStore>,
    pub retention: Option<Arc<dyn Retention>>,
    pub tenant_aware: bool,
    _dir: Option<tempfile::TempDir>,
    schema: Option<PgSchema>,
}

impl StoreUnderTest {
    pub async fn cleanup(self) {
        if let Some(schema) = self.schema {
            schema.drop_schema().await;
        }
    }
}

fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("tasks.db").display())
}

pub async fn all_stores() -> Vec<StoreUnderTest> {
    let mut stores = vec![
        StoreUnderTest {
            name: "in-memory",
            store: Arc::new(InMemoryTaskStore::new()),
            retention: None,
            tenant_aware: false,
            _dir: None,
            schema: None,
        },
        StoreUnderTest {
            name: "tenant-aware in-memory",
            store: Arc::new(InMemoryTaskStore::with_config(
                InMemoryStoreConfig::default().with_tenant_aware(true),
            )),
            retention: None,
            tenant_aware: true,
            _dir: None,
            schema: None,
        },
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = Arc::new(
        SqliteTaskStore::open(&sqlite_url(&dir))
            .await
            .expect("sqlite"),
    );
    stores.push(StoreUnderTest {
        name: "sqlite",
        store: sqlite.clone(),
        retention: Some(sqlite),
        tenant_aware: false,
        _dir: Some(dir),
        schema: None,
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = Arc::new(
        SqliteTaskStore::open_with(&sqlite_url(&dir), &tenanted())
            .await
            .expect("sqlite"),
    );
    stores.push(StoreUnderTest {
        name: "tenant-aware sqlite",
        store: sqlite.clone(),
        retention: Some(sqlite),
        tenant_aware: true,
        _dir: Some(dir),
        schema: None,
    });
    if let Some(schema) = PgSchema::create().await {
        let pg = Arc::new(
            PostgresTaskStore::from_pool(schema.pool().await)
                .await
                .expect("postgres"),
        );
        stores.push(StoreUnderTest {
            name: "postgres",
            store: pg.clone(),
            retention: Some(pg),
            tenant_aware: false,
            _dir: None,
            schema: Some(schema),
        });
    }
    if let Some(schema) = PgSchema::create().await {
        let pg = Arc::new(
            PostgresTaskStore::from_pool_with(schema.pool().await, &tenanted())
                .await
                .expect("postgres"),
        );
        stores.push(StoreUnderTest {
            name: "tenant-aware postgres",
            store: pg.clone(),
            retention: Some(pg),
            tenant_aware: true,
            _dir: None,
            schema: Some(schema),
        });
    }
    stores
}

/// What a [`Hooked`] store is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreCall {
    Load,
    List,
    Write,
    /// Claim, release or find an idempotency key.
    Key,
}

/// The in-memory store, each call first shown to a hook that may fail it: a test counts the
/// calls it cares about, or takes the store down.
pub struct Hooked {
    pub inner: InMemoryTaskStore,
    before: Box<dyn Fn(StoreCall) -> Result<(), StoreError> + Send + Sync>,
}

impl Hooked {
    pub fn new(
        before: impl Fn(StoreCall) -> Result<(), StoreError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: InMemoryTaskStore::new(),
            before: Box::new(before),
        }
    }
}

#[async_trait::async_trait]
impl TaskStore for Hooked {
    async fn load(
        &self,
        tenant: &str,
        id: &TaskId,
        known: Option<u64>,
    ) -> Result<Loaded, StoreError> {
        (self.before)(StoreCall::Load)?;
        self.inner.load(tenant, id, known).await
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        (self.before)(StoreCall::List)?;
        self.inner.list(tenant, query).await
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        (self.before)(StoreCall::Write)?;
        self.inner.write(write).await
    }

    fn supports_idempotency(&self) -> bool {
        true
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        (self.before)(StoreCall::Key)?;
        self.inner.claim_idempotency_key(claim).await
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        (self.before)(StoreCall::Key)?;
        self.inner.release_idempotency_key(claim).await
    }

    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        (self.before)(StoreCall::Key)?;
        self.inner.find_idempotency_key(claim).await
    }
}
