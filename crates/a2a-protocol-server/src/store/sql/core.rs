//! The statements on tasks and keys: reads, versioned writes, the key index, retention, and the
//! store's recorded mode. [`sql_core!`] generates them for one sqlx driver.

/// Generates `SqlCore`, the statements of a SQL store over one driver's pool. `one_writer`
/// says the database takes one writer at a time (SQLite); `pushes` that it can push notices,
/// which `announce` sends inside a write's transaction (PostgreSQL's `pg_notify`).
macro_rules! sql_core {
    ($db:ty, $pool:ty, $classify:path, migrations: $migrations:literal, one_writer: $one_writer:expr, pushes: $pushes:expr, announce: $announce:path, one_statement: $one_statement:path, group: $group:ty, open_group: $open_group:path) => {
        use std::sync::Arc;
        use std::time::Duration;

        use a2a_protocol_types::{Task, TaskId};
        use sqlx::Row as _;

        use crate::store::retention::{PurgeReport, RetentionPolicy};
        use crate::store::sql::{
            Bind, caller_column, decode_head, decode_message, encode_events, encode_head,
            encode_message, holder_outcome, millis, now_millis, status_millis,
        };
        use crate::store::{
            ClaimOutcome, KeyClaim, PageCursor, StoreError, StoredTask, TaskPage, TaskQuery,
            TaskWrite, WriteOutcome,
        };

        static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!($migrations);

        /// The statements, over one pool; `tenant_aware` decides whether tasks are
        /// partitioned by tenant (keys always are).
        pub(crate) struct SqlCore {
            pub(crate) pool: $pool,
            pub(crate) tenant_aware: bool,
            /// Taken for each write when the database admits one writer at a time.
            pub(crate) writer: Option<Arc<tokio::sync::Mutex<()>>>,
            /// Where writes are committed in groups, when the driver does that.
            pub(crate) group: $group,
            /// How long a write waits for its turn before answering "busy".
            pub(crate) busy_timeout: Duration,
            /// Notices pushed by the database, once someone listens (PostgreSQL).
            pub(crate) notices: Arc<crate::store::sql::coordinate::NoticeHub>,
        }

        impl SqlCore {
            pub(crate) async fn new(
                pool: $pool,
                tenant_aware: bool,
                busy_timeout: Duration,
            ) -> Result<Self, StoreError> {
                MIGRATOR
                    .run(&pool)
                    .await
                    .map_err(|e| StoreError::Backend(Box::new(e)))?;
                let writer = $one_writer.then(|| Arc::new(tokio::sync::Mutex::new(())));
                let mut core = Self {
                    pool,
                    tenant_aware,
                    writer,
                    group: <$group>::default(),
                    busy_timeout,
                    notices: Arc::default(),
                };
                core.check_mode().await?;
                core.group = $open_group(&core).await?;
                Ok(core)
            }

            /// Records whether the store partitions tasks by tenant the first time it is
            /// opened, and refuses to open it the other way later: a plain reader of a
            /// tenant-aware store would miss every tenant's tasks but the empty one's.
            async fn check_mode(&self) -> Result<(), StoreError> {
                let wanted = if self.tenant_aware { "true" } else { "false" };
                let read = || async {
                    sqlx::query("SELECT value FROM a2a_store_settings WHERE name = 'tenant_aware'")
                        .fetch_optional(&self.pool)
                        .await
                        .map_err($classify)?
                        .map(|row| row.try_get::<String, _>(0).map_err($classify))
                        .transpose()
                };
                let recorded = match read().await? {
                    Some(recorded) => recorded,
                    None => {
                        // A store from before modes were recorded: tasks under a tenant
                        // name mean it was served tenant-aware.
                        let tenanted = sqlx::query("SELECT 1 FROM a2a_tasks WHERE tenant <> '' LIMIT 1")
                            .fetch_optional(&self.pool)
                            .await
                            .map_err($classify)?
                            .is_some();
                        let mode = if tenanted { "true" } else { wanted };
                        sqlx::query(
                            "INSERT INTO a2a_store_settings (name, value) VALUES ('tenant_aware', $1) \
                             ON CONFLICT (name) DO NOTHING",
                        )
                        .bind(mode)
                        .execute(&self.pool)
                        .await
                        .map_err($classify)?;
                        read().await?.unwrap_or_else(|| mode.to_owned())
                    }
                };
                if recorded == wanted {
                    return Ok(());
                }
                Err(StoreError::ModeMismatch(if recorded == "true" {
                    "this store partitions tasks by tenant: open it tenant-aware \
                     (a2a serve --tenant-aware, or SqlStoreOptions::with_tenant_aware)"
                        .to_owned()
                } else {
                    "this store keeps one namespace of tasks: open it without \
                     --tenant-aware (or with a plain store type)"
                        .to_owned()
                }))
            }

            /// Waits for this process's turn to write, where the database takes one writer
            /// at a time (SQLite), for at most the busy timeout. Writers that collide in the
            /// database instead wait in its busy handler, which sleeps up to 100 ms between
            /// tries: queuing here keeps a write's wait to the writes ahead of it. Other
            /// processes sharing the file still meet the busy handler.
            pub(crate) async fn write_turn(&self) -> Result<Option<tokio::sync::MutexGuard<'_, ()>>, StoreError> {
                let Some(writer) = &self.writer else {
                    return Ok(None);
                };
                match tokio::time::timeout(self.busy_timeout, writer.lock()).await {
                    Ok(guard) => Ok(Some(guard)),
                    Err(_) => Err(StoreError::Busy(format!(
                        "another write held the database for more than {:?}",
                        self.busy_timeout
                    ))),
                }
            }

            pub(crate) fn task_tenant<'a>(&self, tenant: &'a str) -> &'a str {
                if self.tenant_aware { tenant } else { "" }
            }

            /// The head, then the history, unless the head is still at revision `known`: a
            /// message written between the two reads makes the history one ahead of the
            /// revision, so a write over that revision fails and its writer reads again; it
            /// never writes over history it has not seen.
            pub(crate) async fn load(
                &self,
                tenant: &str,
                id: &TaskId,
                known: Option<u64>,
            ) -> Result<crate::store::Loaded, StoreError> {
                use crate::store::Loaded;
                let Some(mut stored) = self.head(tenant, id).await? else {
                    return Ok(Loaded::Missing);
                };
                if Some(stored.revision) == known {
                    return Ok(Loaded::Unchanged(stored));
                }
                stored.task.history = self.history(self.task_tenant(tenant), id.as_str()).await?;
                Ok(Loaded::Changed(stored))
            }

            /// The task without its history, with its revision and turn.
            async fn head(&self, tenant: &str, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
                let tenant = self.task_tenant(tenant);
                let Some(row) = sqlx::query(
                    "SELECT t.body, t.generation, t.revision, t.owner, t.cancel_requested, \
                            t.recoveries, o.expires_millis, t.caller \
                     FROM a2a_tasks t LEFT JOIN a2a_owners o ON o.id = t.owner \
                     WHERE t.tenant = $1 AND t.id = $2",
                )
                .bind(tenant)
                .bind(id.as_str())
                .fetch_optional(&self.pool)
                .await
                .map_err($classify)?
                else {
                    return Ok(None);
                };
                let task = decode_head(
                    &row.try_get::<String, _>(0).map_err($classify)?,
                    row.try_get(1).map_err($classify)?,
                )?;
                let revision: i64 = row.try_get(2).map_err($classify)?;
                let owner: Option<String> = row.try_get(3).map_err($classify)?;
                let cancel_requested: bool = row.try_get(4).map_err($classify)?;
                let recoveries: i32 = row.try_get(5).map_err($classify)?;
                let owner_expires: Option<i64> = row.try_get(6).map_err($classify)?;
                let caller: Option<String> = row.try_get(7).map_err($classify)?;
                let mut stored = StoredTask::new(task, u64::try_from(revision).unwrap_or(0))
                    .with_caller(caller);
                stored.owner_alive = owner_expires.is_some_and(|at| at > now_millis());
                stored.owner = owner;
                stored.cancel_requested = cancel_requested;
                stored.recoveries = u32::try_from(recoveries).unwrap_or(0);
                Ok(Some(stored))
            }

            async fn history(&self, tenant: &str, id: &str) -> Result<Vec<a2a_protocol_types::Message>, StoreError> {
                let rows = sqlx::query(
                    "SELECT body FROM a2a_task_messages WHERE tenant = $1 AND task_id = $2 ORDER BY seq",
                )
                .bind(tenant)
                .bind(id)
                .fetch_all(&self.pool)
                .await
                .map_err($classify)?;
                rows.iter()
                    .map(|row| decode_message(&row.try_get::<String, _>(0).map_err($classify)?))
                    .collect()
            }

            /// One change: in one statement where the driver can ($one_statement answers
            /// `None` where it cannot), else in one transaction.
            pub(crate) async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
                if let Some(outcome) = $one_statement(self, write).await? {
                    return Ok(outcome);
                }
                self.write_in_transaction(write).await
            }

            /// One change, in one transaction: the key (if any), the head over the expected
            /// revision, the new messages and the event. Anything that does not hold rolls it
            /// all back.
            async fn write_in_transaction(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
                let tenant = self.task_tenant(write.tenant);
                let task = &**write.task;
                let head = encode_head(task)?;
                let events = encode_events(write)?;
                let _turn = self.write_turn().await?;
                let mut tx = self.pool.begin().await.map_err($classify)?;
                if let Some(claim) = write.claim {
                    if let Some(held) = claim_in(&mut tx, claim).await? {
                        tx.rollback().await.map_err($classify)?;
                        return Ok(WriteOutcome::KeyHeld(held));
                    }
                }
                let generation = i64::try_from(task.generation).unwrap_or(i64::MAX);
                let statement = match write.expected {
                    None => sqlx::query(
                        "INSERT INTO a2a_tasks \
                           (tenant, id, context_id, state, status_millis, updated_millis, terminal, \
                            body, generation, owner, recoveries, revision, caller) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, COALESCE($11, 0), 1, $12) \
                         ON CONFLICT (tenant, id) DO NOTHING",
                    ),
                    Some(_) => sqlx::query(
                        "UPDATE a2a_tasks SET \
                           context_id = $3, state = $4, status_millis = $5,
                           updated_millis = CASE WHEN $7 THEN $6 ELSE updated_millis END, \
                           terminal = $7, body = $8, generation = $9, owner = $10, \
                           recoveries = COALESCE($11, recoveries), revision = revision + 1 \
                         WHERE tenant = $1 AND id = $2 AND revision = $12 AND terminal = FALSE",
                    ),
                }
                .bind(tenant)
                .bind(task.id.as_str())
                .bind(task.context_id.as_str())
                .bind(task.status.state.as_str())
                .bind(status_millis(task))
                .bind(now_millis())
                .bind(task.status.state.is_terminal())
                .bind(head)
                .bind(generation)
                .bind(write.owner)
                .bind(write.recoveries.map(|n| i32::try_from(n).unwrap_or(i32::MAX)));
                let statement = match write.expected {
                    Some(revision) => statement.bind(i64::try_from(revision).unwrap_or(i64::MAX)),
                    None => statement.bind(write.caller),
                };
                let written = statement
                    .execute(&mut *tx)
                    .await
                    .map_err($classify)?
                    .rows_affected();
                if written == 0 {
                    tx.rollback().await.map_err($classify)?;
                    return Ok(WriteOutcome::Stale);
                }
                insert_messages(&mut tx, tenant, task, write.new_messages).await?;
                if let Some(config) = write.push_config {
                    sqlx::query(
                        "INSERT INTO a2a_push_configs (tenant, task_id, id, body, created_millis) \
                         VALUES ($1, $2, $3, $4, $5) \
                         ON CONFLICT (tenant, task_id, id) DO UPDATE SET body = excluded.body",
                    )
                    .bind(tenant)
                    .bind(task.id.as_str())
                    .bind(config.id.as_str())
                    .bind(crate::store::sql::encode_push_config(config)?)
                    .bind(now_millis())
                    .execute(&mut *tx)
                    .await
                    .map_err($classify)?;
                }
                for (row_generation, row) in crate::store::sql::event_rows(&events) {
                    sqlx::query(
                        "INSERT INTO a2a_task_events (tenant, task_id, generation, body, created_millis) \
                         VALUES ($1, $2, $3, $4, $5) \
                         ON CONFLICT (tenant, task_id, generation) DO NOTHING",
                    )
                    .bind(tenant)
                    .bind(task.id.as_str())
                    .bind(row_generation)
                    .bind(row)
                    .bind(now_millis())
                    .execute(&mut *tx)
                    .await
                    .map_err($classify)?;
                }
                for (event_generation, event) in &events {
                    // The outbox: a notification per push config of the task, in this
                    // transaction, so none is lost and none announces an event not written.
                    sqlx::query(
                        "INSERT INTO a2a_push_outbox \
                           (tenant, task_id, config_id, generation, body, due_millis, created_millis) \
                         SELECT tenant, task_id, id, $3, $4, $5, $5 FROM a2a_push_configs \
                         WHERE tenant = $1 AND task_id = $2 \
                         ON CONFLICT (tenant, task_id, config_id, generation) DO NOTHING",
                    )
                    .bind(tenant)
                    .bind(task.id.as_str())
                    .bind(event_generation)
                    .bind(event.as_str())
                    .bind(now_millis())
                    .execute(&mut *tx)
                    .await
                    .map_err($classify)?;
                }
                if $pushes && !events.is_empty() {
                    let payload = crate::store::sql::coordinate::encode_notice(
                        'g',
                        task.generation,
                        tenant,
                        &task.id,
                    );
                    if let Some(payload) = payload {
                        $announce(&mut tx, &payload).await.map_err($classify)?;
                    }
                }
                tx.commit().await.map_err($classify)?;
                Ok(WriteOutcome::Written)
            }

            pub(crate) async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
                let tenant = self.task_tenant(tenant);
                let mut filters = format!("tenant = $1 AND {}", crate::store::sql::LISTED);
                let mut binds = vec![Bind::Text(tenant.to_owned())];
                if let Some(caller) = &query.caller {
                    binds.push(Bind::Text(caller.clone()));
                    filters.push_str(&format!(" AND caller = ${}", binds.len()));
                }
                if let Some(context) = &query.context_id {
                    binds.push(Bind::Text(context.to_string()));
                    filters.push_str(&format!(" AND context_id = ${}", binds.len()));
                }
                if let Some(state) = query.status {
                    binds.push(Bind::Text(state.as_str().to_owned()));
                    filters.push_str(&format!(" AND state = ${}", binds.len()));
                }
                if let Some(after) = query.status_timestamp_after {
                    binds.push(Bind::Int(after.unix_millis()));
                    filters.push_str(&format!(" AND status_millis > ${}", binds.len()));
                }
                let count_sql = format!("SELECT COUNT(*) FROM a2a_tasks WHERE {filters}");
                let mut page_filters = filters.clone();
                let mut page_binds = binds.clone();
                if let Some(cursor) = &query.cursor {
                    page_binds.push(Bind::Int(cursor.status_millis));
                    page_binds.push(Bind::Text(cursor.task_id.clone()));
                    page_filters.push_str(&format!(
                        " AND (status_millis < ${a} OR (status_millis = ${a} AND id < ${b}))",
                        a = page_binds.len() - 1,
                        b = page_binds.len()
                    ));
                }
                let limit = i64::try_from(query.page_size).unwrap_or(i64::MAX).saturating_add(1);
                page_binds.push(Bind::Int(limit));
                let page_sql = format!(
                    "SELECT body, generation FROM a2a_tasks WHERE {page_filters} \
                     ORDER BY status_millis DESC, id DESC LIMIT ${}",
                    page_binds.len()
                );

                // Planned on every call, not kept: which listing index suits a filter depends
                // on how many tasks there are, and a plan kept from an empty table would walk
                // every task of the tenant to find one context's.
                let bound = |sql, binds: Vec<Bind>| {
                    binds.into_iter().fold(sqlx::query(sql).persistent(false), |query, bind| match bind {
                        Bind::Text(s) => query.bind(s),
                        Bind::Int(i) => query.bind(i),
                    })
                };
                let total: i64 = bound(&count_sql, binds)
                    .fetch_one(&self.pool)
                    .await
                    .map_err($classify)?
                    .try_get(0)
                    .map_err($classify)?;

                let rows = bound(&page_sql, page_binds)
                    .fetch_all(&self.pool).await.map_err($classify)?;
                let mut tasks = rows
                    .iter()
                    .map(|row| {
                        decode_head(
                            &row.try_get::<String, _>(0).map_err($classify)?,
                            row.try_get(1).map_err($classify)?,
                        )
                    })
                    .collect::<Result<Vec<Task>, StoreError>>()?;
                let next = if tasks.len() > query.page_size {
                    tasks.truncate(query.page_size);
                    tasks.last().map(|last| PageCursor {
                        status_millis: status_millis(last),
                        task_id: last.id.to_string(),
                    })
                } else {
                    None
                };
                self.attach_histories(tenant, &mut tasks).await?;
                Ok(TaskPage {
                    tasks,
                    next,
                    total_size: usize::try_from(total).unwrap_or(0),
                })
            }

            /// Fills in the histories of a page of tasks with one query.
            async fn attach_histories(&self, tenant: &str, tasks: &mut [Task]) -> Result<(), StoreError> {
                if tasks.is_empty() {
                    return Ok(());
                }
                let mut query = sqlx::QueryBuilder::<$db>::new(
                    "SELECT task_id, body FROM a2a_task_messages WHERE tenant = ",
                );
                query.push_bind(tenant).push(" AND task_id IN (");
                let mut ids = query.separated(", ");
                for task in tasks.iter() {
                    ids.push_bind(task.id.as_str());
                }
                ids.push_unseparated(") ORDER BY task_id, seq");
                let rows = query.build().fetch_all(&self.pool).await.map_err($classify)?;
                let mut by_task: std::collections::HashMap<String, Vec<a2a_protocol_types::Message>> =
                    std::collections::HashMap::new();
                for row in &rows {
                    let id: String = row.try_get(0).map_err($classify)?;
                    let message = decode_message(&row.try_get::<String, _>(1).map_err($classify)?)?;
                    by_task.entry(id).or_default().push(message);
                }
                for task in tasks.iter_mut() {
                    task.history = by_task.remove(task.id.as_str()).unwrap_or_default();
                }
                Ok(())
            }

            pub(crate) async fn claim(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
                // Retries are the common case for a held key: answer them with a read.
                if let Some(held) = held_key(&self.pool, claim).await? {
                    return Ok(held);
                }
                let _turn = self.write_turn().await?;
                let mut tx = self.pool.begin().await.map_err($classify)?;
                let held = claim_in(&mut tx, claim).await?;
                tx.commit().await.map_err($classify)?;
                Ok(held.unwrap_or(ClaimOutcome::Claimed))
            }

            pub(crate) async fn find_key(&self, claim: &KeyClaim) -> Result<Option<ClaimOutcome>, StoreError> {
                held_key(&self.pool, claim).await
            }

            pub(crate) async fn release(&self, claim: &KeyClaim) -> Result<(), StoreError> {
                let _turn = self.write_turn().await?;
                sqlx::query(
                    "DELETE FROM a2a_idempotency_keys \
                     WHERE tenant = $1 AND caller = $2 AND idempotency_key = $3 AND task_id = $4",
                )
                .bind(&claim.scope.tenant)
                .bind(caller_column(&claim.scope))
                .bind(claim.key.as_str())
                .bind(claim.task_id.as_str())
                .execute(&self.pool)
                .await
                .map_err($classify)?;
                Ok(())
            }

            pub(crate) async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport, StoreError> {
                let now = now_millis();
                let batch = i64::from(policy.batch_size);
                let mut report = PurgeReport::default();

                let task_cutoff = now.saturating_sub(millis(policy.terminal_max_age));
                let mut drained = false;
                for _ in 0..policy.max_batches {
                    // A turn per batch, so sends wait for one batch at most.
                    let _turn = self.write_turn().await?;
                    let mut tx = self.pool.begin().await.map_err($classify)?;
                    let rows = sqlx::query(
                        // `terminal` as written, not bound: PostgreSQL's retention index holds
                        // terminal tasks only, and a kept plan cannot tell a bound value.
                        "SELECT tenant, id FROM a2a_tasks \
                         WHERE terminal = TRUE AND updated_millis < $1 LIMIT $2",
                    )
                    .bind(task_cutoff)
                    .bind(batch)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err($classify)?;
                    let gone = rows
                        .iter()
                        .map(|row| Ok((row.try_get::<String, _>(0)?, row.try_get::<String, _>(1)?)))
                        .collect::<Result<Vec<(String, String)>, sqlx::Error>>()
                        .map_err($classify)?;
                    for table in [
                        "a2a_task_messages",
                        "a2a_task_events",
                        "a2a_push_configs",
                        "a2a_push_outbox",
                    ] {
                        delete_tasks_rows(&mut tx, table, "task_id", &gone).await?;
                    }
                    delete_tasks_rows(&mut tx, "a2a_tasks", "id", &gone).await?;
                    tx.commit().await.map_err($classify)?;
                    report.tasks_deleted += gone.len() as u64;
                    if (gone.len() as u64) < u64::from(policy.batch_size) {
                        drained = true;
                        break;
                    }
                }
                let mut finished = drained;

                // A key goes only once its task is gone: never with it, never before it. Its
                // task is stored under the key's tenant in a tenant-aware store and under ''
                // in a plain one; looking in both keeps every live key, however the store is
                // opened.
                let key_cutoff = now.saturating_sub(millis(policy.key_age()));
                let mut drained = false;
                for _ in 0..policy.max_batches {
                    let _turn = self.write_turn().await?;
                    let deleted = sqlx::query(
                        "DELETE FROM a2a_idempotency_keys WHERE (tenant, caller, idempotency_key) IN ( \
                           SELECT k.tenant, k.caller, k.idempotency_key FROM a2a_idempotency_keys k \
                           WHERE k.created_millis < $1 \
                             AND NOT EXISTS (SELECT 1 FROM a2a_tasks t \
                                             WHERE t.id = k.task_id AND t.tenant IN (k.tenant, '')) \
                           LIMIT $2)",
                    )
                    .bind(key_cutoff)
                    .bind(batch)
                    .execute(&self.pool)
                    .await
                    .map_err($classify)?
                    .rows_affected();
                    report.keys_deleted += deleted;
                    if deleted < u64::from(policy.batch_size) {
                        drained = true;
                        break;
                    }
                }
                finished &= drained;
                finished &= self.trim_events(policy).await?;
                report.finished = finished;
                Ok(report)
            }

            /// Saves a push config, in one statement: only for a task that exists, and only
            /// while the task has fewer than `max_per_task` other configs. Two racing saves of
            /// new ids on PostgreSQL may each see room for one, so the cap can be passed by the
            /// number of racing saves; it bounds storage, not correctness.
            pub(crate) async fn save_push_config(
                &self,
                tenant: &str,
                config: &a2a_protocol_types::push::TaskPushNotificationConfig,
                max_per_task: usize,
            ) -> Result<crate::store::PushConfigSaved, StoreError> {
                let tenant = self.task_tenant(tenant);
                let body = crate::store::sql::encode_push_config(config)?;
                let _turn = self.write_turn().await?;
                let saved = sqlx::query(
                    "INSERT INTO a2a_push_configs (tenant, task_id, id, body, created_millis) \
                     SELECT $1, $2, $3, $4, $5 \
                     WHERE EXISTS (SELECT 1 FROM a2a_tasks WHERE tenant = $1 AND id = $2) \
                       AND (SELECT COUNT(*) FROM a2a_push_configs \
                            WHERE tenant = $1 AND task_id = $2 AND id <> $3) < $6 \
                     ON CONFLICT (tenant, task_id, id) DO UPDATE SET body = excluded.body",
                )
                .bind(tenant)
                .bind(config.task_id.as_str())
                .bind(config.id.as_str())
                .bind(body)
                .bind(now_millis())
                .bind(i64::try_from(max_per_task).unwrap_or(i64::MAX))
                .execute(&self.pool)
                .await
                .map_err($classify)?
                .rows_affected();
                if saved > 0 {
                    return Ok(crate::store::PushConfigSaved::Saved);
                }
                let task = sqlx::query("SELECT 1 FROM a2a_tasks WHERE tenant = $1 AND id = $2")
                    .bind(tenant)
                    .bind(config.task_id.as_str())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err($classify)?;
                Ok(if task.is_some() {
                    crate::store::PushConfigSaved::AtCap
                } else {
                    crate::store::PushConfigSaved::TaskMissing
                })
            }

            pub(crate) async fn get_push_config(
                &self,
                tenant: &str,
                task_id: &TaskId,
                id: &str,
            ) -> Result<Option<a2a_protocol_types::push::TaskPushNotificationConfig>, StoreError> {
                let row = sqlx::query(
                    "SELECT body FROM a2a_push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3",
                )
                .bind(self.task_tenant(tenant))
                .bind(task_id.as_str())
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err($classify)?;
                row.map(|row| decode_push_config(&row.try_get::<String, _>(0).map_err($classify)?))
                    .transpose()
            }

            pub(crate) async fn list_push_configs(
                &self,
                tenant: &str,
                task_id: &TaskId,
                after: Option<&str>,
                limit: usize,
            ) -> Result<Vec<a2a_protocol_types::push::TaskPushNotificationConfig>, StoreError> {
                // Ids are never empty, so "after the empty id" is "from the first".
                let rows = sqlx::query(
                    "SELECT body FROM a2a_push_configs WHERE tenant = $1 AND task_id = $2 AND id > $3 \
                     ORDER BY id LIMIT $4",
                )
                .bind(self.task_tenant(tenant))
                .bind(task_id.as_str())
                .bind(after.unwrap_or(""))
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(&self.pool)
                .await
                .map_err($classify)?;
                rows.iter()
                    .map(|row| decode_push_config(&row.try_get::<String, _>(0).map_err($classify)?))
                    .collect()
            }

            pub(crate) async fn delete_push_config(
                &self,
                tenant: &str,
                task_id: &TaskId,
                id: &str,
            ) -> Result<bool, StoreError> {
                let tenant = self.task_tenant(tenant);
                let _turn = self.write_turn().await?;
                let mut tx = self.pool.begin().await.map_err($classify)?;
                let deleted = sqlx::query(
                    "DELETE FROM a2a_push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3",
                )
                .bind(tenant)
                .bind(task_id.as_str())
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err($classify)?
                .rows_affected();
                // No notification goes to a deleted config, not even one already waiting.
                sqlx::query(
                    "DELETE FROM a2a_push_outbox WHERE tenant = $1 AND task_id = $2 AND config_id = $3",
                )
                .bind(tenant)
                .bind(task_id.as_str())
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err($classify)?;
                tx.commit().await.map_err($classify)?;
                Ok(deleted > 0)
            }

            /// Claims due notifications: the oldest live one of each task and config, not
            /// claimed by anyone whose claim still runs. Each is taken by a conditional
            /// update, so of two processes that picked the same one only one gets it.
            pub(crate) async fn claim_push_deliveries(
                &self,
                claimant: &str,
                lease: Duration,
                limit: usize,
            ) -> Result<Vec<crate::store::PushDelivery>, StoreError> {
                let now = now_millis();
                let until = now.saturating_add(millis(lease));
                let rows = sqlx::query(
                    "SELECT o.tenant, o.task_id, o.config_id, o.generation, o.body, o.attempts, \
                            o.last_error, c.body \
                     FROM a2a_push_outbox o JOIN a2a_push_configs c \
                       ON c.tenant = o.tenant AND c.task_id = o.task_id AND c.id = o.config_id \
                     WHERE o.dead = $1 AND o.due_millis <= $2 AND o.claimed_until_millis <= $2 \
                       AND NOT EXISTS (SELECT 1 FROM a2a_push_outbox p \
                                       WHERE p.tenant = o.tenant AND p.task_id = o.task_id \
                                         AND p.config_id = o.config_id AND p.dead = $1 \
                                         AND p.generation < o.generation) \
                     ORDER BY o.due_millis LIMIT $3",
                )
                .bind(false)
                .bind(now)
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(&self.pool)
                .await
                .map_err($classify)?;
                let mut claimed = Vec::with_capacity(rows.len());
                for row in rows {
                    let delivery = decode_delivery(&row)?;
                    let _turn = self.write_turn().await?;
                    let taken = sqlx::query(
                        "UPDATE a2a_push_outbox SET claimed_by = $5, claimed_until_millis = $6 \
                         WHERE tenant = $1 AND task_id = $2 AND config_id = $3 AND generation = $4 \
                           AND dead = $7 AND claimed_until_millis <= $8",
                    )
                    .bind(&delivery.tenant)
                    .bind(delivery.config.task_id.as_str())
                    .bind(delivery.config.id.as_str())
                    .bind(i64::try_from(delivery.generation).unwrap_or(i64::MAX))
                    .bind(claimant)
                    .bind(until)
                    .bind(false)
                    .bind(now)
                    .execute(&self.pool)
                    .await
                    .map_err($classify)?
                    .rows_affected();
                    if taken == 1 {
                        claimed.push(delivery);
                    }
                }
                Ok(claimed)
            }

            /// Records how an attempt went, if `claimant` still holds the notification.
            pub(crate) async fn settle_push_delivery(
                &self,
                claimant: &str,
                delivery: &crate::store::PushDelivery,
                settled: &crate::store::DeliverySettled,
            ) -> Result<(), StoreError> {
                use crate::store::DeliverySettled;
                let key = (
                    delivery.tenant.as_str(),
                    delivery.config.task_id.as_str(),
                    delivery.config.id.as_str(),
                    i64::try_from(delivery.generation).unwrap_or(i64::MAX),
                );
                let _turn = self.write_turn().await?;
                let query = match settled {
                    DeliverySettled::Delivered => sqlx::query(
                        "DELETE FROM a2a_push_outbox \
                         WHERE tenant = $1 AND task_id = $2 AND config_id = $3 AND generation = $4 \
                           AND claimed_by = $5",
                    )
                    .bind(key.0)
                    .bind(key.1)
                    .bind(key.2)
                    .bind(key.3)
                    .bind(claimant),
                    DeliverySettled::Retry { at, error } => sqlx::query(
                        "UPDATE a2a_push_outbox SET attempts = attempts + 1, due_millis = $6, \
                           last_error = $7, claimed_by = NULL, claimed_until_millis = 0 \
                         WHERE tenant = $1 AND task_id = $2 AND config_id = $3 AND generation = $4 \
                           AND claimed_by = $5",
                    )
                    .bind(key.0)
                    .bind(key.1)
                    .bind(key.2)
                    .bind(key.3)
                    .bind(claimant)
                    .bind(crate::store::epoch_millis(*at))
                    .bind(error.as_str()),
                    DeliverySettled::Dead { error } => sqlx::query(
                        "UPDATE a2a_push_outbox SET attempts = attempts + 1, due_millis = $6, \
                           last_error = $7, dead = $8, claimed_by = NULL, claimed_until_millis = 0 \
                         WHERE tenant = $1 AND task_id = $2 AND config_id = $3 AND generation = $4 \
                           AND claimed_by = $5",
                    )
                    .bind(key.0)
                    .bind(key.1)
                    .bind(key.2)
                    .bind(key.3)
                    .bind(claimant)
                    .bind(now_millis())
                    .bind(error.as_str())
                    .bind(true),
                };
                query.execute(&self.pool).await.map_err($classify)?;
                Ok(())
            }

            /// The dead letters, the most recently given up first.
            pub(crate) async fn dead_push_deliveries(
                &self,
                limit: usize,
            ) -> Result<Vec<crate::store::PushDelivery>, StoreError> {
                let rows = sqlx::query(
                    "SELECT o.tenant, o.task_id, o.config_id, o.generation, o.body, o.attempts, \
                            o.last_error, c.body \
                     FROM a2a_push_outbox o JOIN a2a_push_configs c \
                       ON c.tenant = o.tenant AND c.task_id = o.task_id AND c.id = o.config_id \
                     WHERE o.dead = $1 ORDER BY o.due_millis DESC LIMIT $2",
                )
                .bind(true)
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(&self.pool)
                .await
                .map_err($classify)?;
                rows.iter().map(decode_delivery).collect()
            }

            /// Deletes events older than the policy keeps them: they serve followers that are
            /// a moment behind, not history. True when none older are left.
            pub(crate) async fn trim_events(&self, policy: &RetentionPolicy) -> Result<bool, StoreError> {
                let cutoff = now_millis().saturating_sub(millis(policy.event_max_age));
                let batch = i64::from(policy.batch_size);
                for _ in 0..policy.max_batches {
                    let _turn = self.write_turn().await?;
                    let deleted = sqlx::query(
                        "DELETE FROM a2a_task_events WHERE (tenant, task_id, generation) IN ( \
                           SELECT tenant, task_id, generation FROM a2a_task_events \
                           WHERE created_millis < $1 LIMIT $2)",
                    )
                    .bind(cutoff)
                    .bind(batch)
                    .execute(&self.pool)
                    .await
                    .map_err($classify)?
                    .rows_affected();
                    if deleted < u64::from(policy.batch_size) {
                        drop(_turn);
                        let _turn = self.write_turn().await?;
                        sqlx::query("DELETE FROM a2a_followers WHERE expires_millis < $1")
                            .bind(now_millis())
                            .execute(&self.pool)
                            .await
                            .map_err($classify)?;
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }

        /// A notification as the claim and dead-letter queries select it.
        fn decode_delivery(
            row: &<$db as sqlx::Database>::Row,
        ) -> Result<crate::store::PushDelivery, StoreError> {
            let read = || -> Result<_, sqlx::Error> {
                Ok((
                    row.try_get::<String, _>(0)?,
                    row.try_get::<i64, _>(3)?,
                    row.try_get::<String, _>(4)?,
                    row.try_get::<i32, _>(5)?,
                    row.try_get::<Option<String>, _>(6)?,
                    row.try_get::<String, _>(7)?,
                ))
            };
            let (tenant, generation, event, attempts, last_error, config) =
                read().map_err($classify)?;
            let mut delivery = crate::store::PushDelivery::new(
                tenant,
                decode_push_config(&config)?,
                u64::try_from(generation).unwrap_or_default(),
                crate::store::sql::decode_event_at(&event, generation)?,
            );
            delivery.attempts = u32::try_from(attempts).unwrap_or_default();
            delivery.last_error = last_error;
            Ok(delivery)
        }

        fn decode_push_config(
            body: &str,
        ) -> Result<a2a_protocol_types::push::TaskPushNotificationConfig, StoreError> {
            serde_json::from_str(body).map_err(|e| StoreError::Corrupt(format!("push config: {e}")))
        }

        /// Appends the last `count` messages of `task.history`, numbered by their place in it.
        async fn insert_messages(
            tx: &mut sqlx::Transaction<'_, $db>,
            tenant: &str,
            task: &Task,
            count: usize,
        ) -> Result<(), StoreError> {
            let first = task.history.len().saturating_sub(count);
            if first == task.history.len() {
                return Ok(());
            }
            let rows = task.history[first..]
                .iter()
                .enumerate()
                .map(|(i, message)| Ok((i64::try_from(first + i).unwrap_or(i64::MAX), encode_message(message)?)))
                .collect::<Result<Vec<(i64, String)>, StoreError>>()?;
            let mut query = sqlx::QueryBuilder::<$db>::new(
                "INSERT INTO a2a_task_messages (tenant, task_id, seq, body) ",
            );
            query.push_values(rows, |mut row, (seq, body)| {
                row.push_bind(tenant)
                    .push_bind(task.id.as_str())
                    .push_bind(seq)
                    .push_bind(body);
            });
            query.build().execute(&mut **tx).await.map_err($classify)?;
            Ok(())
        }

        /// Deletes the rows of `table` that belong to the tasks `gone`.
        async fn delete_tasks_rows(
            tx: &mut sqlx::Transaction<'_, $db>,
            table: &str,
            id_column: &str,
            gone: &[(String, String)],
        ) -> Result<(), StoreError> {
            if gone.is_empty() {
                return Ok(());
            }
            let mut query = sqlx::QueryBuilder::<$db>::new(format!(
                "DELETE FROM {table} WHERE (tenant, {id_column}) IN ("
            ));
            let mut pairs = query.separated(", ");
            for (tenant, id) in gone {
                pairs.push("(");
                pairs.push_bind_unseparated(tenant.as_str());
                pairs.push_unseparated(", ");
                pairs.push_bind_unseparated(id.as_str());
                pairs.push_unseparated(")");
            }
            pairs.push_unseparated(")");
            query.build().execute(&mut **tx).await.map_err($classify)?;
            Ok(())
        }

        /// Who holds the claim's key, if anyone does.
        pub(crate) async fn held_key<'e, E>(executor: E, claim: &KeyClaim) -> Result<Option<ClaimOutcome>, StoreError>
        where
            E: sqlx::Executor<'e, Database = $db>,
        {
            let held = sqlx::query(
                "SELECT message_id, task_id FROM a2a_idempotency_keys \
                 WHERE tenant = $1 AND caller = $2 AND idempotency_key = $3",
            )
            .bind(&claim.scope.tenant)
            .bind(caller_column(&claim.scope))
            .bind(claim.key.as_str())
            .fetch_optional(executor)
            .await
            .map_err($classify)?;
            held.map(|row| {
                let message_id: String = row.try_get(0).map_err($classify)?;
                let task_id: String = row.try_get(1).map_err($classify)?;
                Ok(holder_outcome(claim, &message_id, task_id))
            })
            .transpose()
        }

        /// Takes the claim's key inside `tx`; `Some(holder)` when another send holds it. One
        /// statement inserts the key or touches the holder's row without changing it, and
        /// either way returns the holder: reading our own token back means we inserted. So a
        /// claim racing a release sees the holder or a free key, never neither; a claim
        /// racing another claim's transaction waits for it.
        async fn claim_in(
            tx: &mut sqlx::Transaction<'_, $db>,
            claim: &KeyClaim,
        ) -> Result<Option<ClaimOutcome>, StoreError> {
            let token = uuid::Uuid::new_v4().to_string();
            let holder = sqlx::query(
                "INSERT INTO a2a_idempotency_keys \
                   (tenant, caller, idempotency_key, message_id, task_id, claim_token, created_millis) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (tenant, caller, idempotency_key) \
                   DO UPDATE SET idempotency_key = excluded.idempotency_key \
                 RETURNING message_id, task_id, claim_token",
            )
            .bind(&claim.scope.tenant)
            .bind(caller_column(&claim.scope))
            .bind(claim.key.as_str())
            .bind(claim.message_id.as_str())
            .bind(claim.task_id.as_str())
            .bind(&token)
            .bind(now_millis())
            .fetch_one(&mut **tx)
            .await
            .map_err($classify)?;
            let message_id: String = holder.try_get(0).map_err($classify)?;
            let task_id: String = holder.try_get(1).map_err($classify)?;
            let holder_token: String = holder.try_get(2).map_err($classify)?;
            if holder_token == token {
                return Ok(None);
            }
            Ok(Some(holder_outcome(claim, &message_id, task_id)))
        }
    };
}

pub(crate) use sql_core;
