//! Opening the store a URL names, and sweeping it (`a2a purge`).

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_server::store::{
    InMemoryStoreConfig, InMemoryTaskStore, PostgresTaskStore, Retention, RetentionPolicy,
    SqlStoreOptions, SqliteTaskStore, StoreError, TaskStore,
};

use crate::exit::Failure;
use crate::output::Output;

/// The store `a2a serve` and `a2a purge` use when none is named.
pub(crate) const DEFAULT_STORE: &str = "sqlite://a2a.db";

/// How long things are kept: the sweep's policy for SQL stores, the limits of the in-memory
/// ones. Unset fields keep each store's own default.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct Keep {
    /// How long a terminal task is kept after it settles, such as `1h` or `7d`
    /// [default: 7d in a SQL store, 1h in memory].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) keep_terminal: Option<Duration>,
    /// How long an idempotency key is kept at least, such as `24h`; a SQL store never deletes a
    /// key while its task is stored [default: 24h].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) keep_keys: Option<Duration>,
    /// In memory: how many idempotency keys one caller (or, unauthenticated, one client
    /// network: a /24 or a /64) may hold once the key index is half full [default: 10000].
    #[arg(long)]
    pub(crate) max_keys_per_caller: Option<usize>,
    /// In memory: how many idempotency keys all clients without credentials may hold
    /// together; the rest of the index (100000) is for authenticated callers [default: 50000].
    #[arg(long)]
    pub(crate) max_unauthenticated_keys: Option<usize>,
    /// In memory: how many MiB of task content (messages, artifacts) are held at most; the
    /// oldest finished tasks make room [default: 256].
    #[arg(long)]
    pub(crate) max_task_mib: Option<usize>,
}

impl Keep {
    pub(crate) fn policy(&self) -> RetentionPolicy {
        let mut policy = RetentionPolicy::default();
        if let Some(age) = self.keep_terminal {
            policy = policy.with_terminal_max_age(age);
        }
        if let Some(age) = self.keep_keys {
            policy = policy.with_idempotency_key_max_age(age);
        }
        policy
    }

    fn memory_config(&self) -> InMemoryStoreConfig {
        let mut config = InMemoryStoreConfig::default();
        if let Some(ttl) = self.keep_terminal {
            config = config.with_terminal_task_ttl(ttl);
        }
        if let Some(ttl) = self.keep_keys {
            config = config.with_idempotency_key_ttl(ttl);
        }
        if let Some(max) = self.max_keys_per_caller {
            config = config.with_max_idempotency_keys_per_holder(max);
        }
        if let Some(max) = self.max_unauthenticated_keys {
            config = config.with_max_unauthenticated_idempotency_keys(max);
        }
        if let Some(mib) = self.max_task_mib {
            config = config.with_max_task_bytes(mib.saturating_mul(1024 * 1024));
        }
        config
    }
}

/// An open store, and its retention half when it is a SQL store.
pub(crate) struct OpenStore {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) retention: Option<Arc<dyn Retention>>,
}

/// `url` fit to print or log: a password, in the user part or a `password=` parameter, is
/// replaced by `***`.
pub(crate) fn redacted(url: &str) -> String {
    let mut shown = url.to_owned();
    if let Some(scheme) = shown.find("://") {
        let start = scheme + 3;
        let end = shown[start..]
            .find(['/', '?', '#'])
            .map_or(shown.len(), |i| start + i);
        if let Some(at) = shown[start..end].rfind('@')
            && let Some(colon) = shown[start..start + at].find(':')
        {
            shown.replace_range(start + colon + 1..start + at, "***");
        }
    }
    let Some((head, query)) = shown.split_once('?') else {
        return shown;
    };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if name.eq_ignore_ascii_case("password") => format!("{name}=***"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{head}?{}", query.join("&"))
}

/// Opens `sqlite://FILE`, `postgres://...` or `memory:`.
fn opening_failed(url: &str, error: StoreError) -> Failure {
    Failure::store(format!("cannot open the store {}: {error}", redacted(url)))
}

pub(crate) async fn open(url: &str, tenant_aware: bool, keep: &Keep) -> Result<OpenStore, Failure> {
    match open_as(url, tenant_aware, keep).await {
        Ok(opened) => Ok(opened),
        Err(StoreError::Unsupported) => Err(Failure::usage(format!(
            "unknown store {:?}: use sqlite://FILE, postgres://USER@HOST/DB, or memory:",
            redacted(url)
        ))),
        Err(error) => Err(opening_failed(url, error)),
    }
}

/// Opens the store `url` names; [`StoreError::Unsupported`] for a URL that names none.
async fn open_as(url: &str, tenant_aware: bool, keep: &Keep) -> Result<OpenStore, StoreError> {
    fn sql<S: TaskStore + Retention>(store: S) -> OpenStore {
        let store = Arc::new(store);
        OpenStore {
            store: store.clone(),
            retention: Some(store),
        }
    }
    if url == "memory" || url == "memory:" {
        let config = keep.memory_config().with_tenant_aware(tenant_aware);
        return Ok(OpenStore {
            store: Arc::new(InMemoryTaskStore::with_config(config)),
            retention: None,
        });
    }
    let options = SqlStoreOptions::default().with_tenant_aware(tenant_aware);
    if url.starts_with("sqlite:") {
        return Ok(sql(SqliteTaskStore::open_with(url, &options).await?));
    }
    if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        return Ok(sql(PostgresTaskStore::open_with(url, &options).await?));
    }
    Err(StoreError::Unsupported)
}

#[derive(clap::Args)]
pub(crate) struct PurgeArgs {
    /// The store to sweep: `sqlite://FILE` or `postgres://USER@HOST/DB`.
    #[arg(long, default_value = DEFAULT_STORE)]
    store: String,
    #[command(flatten)]
    keep: Keep,
}

/// `a2a purge`: one retention sweep, as `a2a serve` runs in the background.
pub(crate) async fn purge(args: PurgeArgs, output: Output) -> Result<(), Failure> {
    // The sweep treats the store as it is served: a store records whether it is tenant-aware,
    // and opened the other way it says so.
    let opened = match open_as(&args.store, false, &args.keep).await {
        Err(StoreError::ModeMismatch(_)) => open(&args.store, true, &args.keep).await?,
        other => other.map_err(|e| opening_failed(&args.store, e))?,
    };
    let retention = opened.retention.ok_or_else(|| {
        Failure::usage(
            "an in-memory store lives in its server's process: there is nothing to purge",
        )
    })?;
    let report = retention
        .purge_expired(&args.keep.policy())
        .await
        .map_err(|e| {
            Failure::store(format!(
                "the sweep of {} failed: {e}",
                redacted(&args.store)
            ))
        })?;
    let json = serde_json::json!({
        "tasksDeleted": report.tasks_deleted,
        "keysDeleted": report.keys_deleted,
        "finished": report.finished,
    });
    output.show(&json, |_| {
        format!(
            "deleted {} terminal tasks and {} idempotency keys{}",
            report.tasks_deleted,
            report.keys_deleted,
            if report.finished {
                ""
            } else {
                "; more are due, run it again"
            }
        )
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn passwords_are_hidden_wherever_a_url_carries_them() {
        for (url, shown) in [
            ("postgres://a:pw@db/x", "postgres://a:***@db/x"),
            (
                "postgres://a:p@w:rd@db:5432/x",
                "postgres://a:***@db:5432/x",
            ),
            (
                "postgres://a@db/x?password=pw",
                "postgres://a@db/x?password=***",
            ),
            (
                "postgres://a@db/x?sslmode=require&PASSWORD=pw&x=1",
                "postgres://a@db/x?sslmode=require&PASSWORD=***&x=1",
            ),
            ("postgres://a@db/x", "postgres://a@db/x"),
            ("sqlite://a2a.db", "sqlite://a2a.db"),
            ("memory:", "memory:"),
            ("postgres://db/x?user=a@b", "postgres://db/x?user=a@b"),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
        }
    }
}

#[derive(clap::Args)]
pub(crate) struct DeadLettersArgs {
    /// The store whose outbox to read: `sqlite://FILE` or `postgres://USER@HOST/DB`.
    #[arg(long, default_value = DEFAULT_STORE)]
    store: String,
    /// Show at most this many, the most recently given up first.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    #[command(flatten)]
    keep: Keep,
}

/// `a2a dead-letters`: the push notifications given up on, with why.
pub(crate) async fn dead_letters(args: DeadLettersArgs, output: Output) -> Result<(), Failure> {
    let opened = match open_as(&args.store, false, &args.keep).await {
        Err(StoreError::ModeMismatch(_)) => open(&args.store, true, &args.keep).await?,
        other => other.map_err(|e| opening_failed(&args.store, e))?,
    };
    if opened.retention.is_none() {
        return Err(Failure::usage(
            "an in-memory store lives in its server's process: its dead letters are there",
        ));
    }
    let Some(push) = opened.store.capabilities().push else {
        return Err(Failure::usage(
            "this store keeps no push notifications, so it has no dead letters",
        ));
    };
    let dead = push.dead_push_deliveries(args.limit).await.map_err(|e| {
        Failure::store(format!(
            "reading the dead letters of {} failed: {e}",
            redacted(&args.store)
        ))
    })?;
    let json: Vec<serde_json::Value> = dead
        .iter()
        .map(|d| {
            serde_json::json!({
                "deliveryId": d.delivery_id(),
                "tenant": d.tenant,
                "taskId": d.config.task_id,
                "configId": d.config.id,
                "generation": d.generation.to_string(),
                "attempts": d.attempts,
                "lastError": d.last_error,
            })
        })
        .collect();
    output.show(&json, |_| {
        if dead.is_empty() {
            return "no dead letters: every push notification was delivered or is still being tried"
                .to_owned();
        }
        dead.iter()
            .map(|d| {
                format!(
                    "{}  {} attempts  {}",
                    d.delivery_id(),
                    d.attempts,
                    d.last_error.as_deref().unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
}
