//! The plans PostgreSQL keeps for the store's statements, made while the tables are empty
//! (new, then analyzed empty): writes find tasks by the primary key and scan no table, and
//! listing and retention still use their indexes. (ListTasks is planned on every call, so
//! its plan for a context or a state follows the table as it grows.)

use sqlx::Executor as _;
use sqlx::Row as _;

use crate::store::PostgresTaskStore;
use crate::store::sql::LISTED;

/// The plan PostgreSQL keeps for `sql` on `connection`: prepared, and explained as it runs
/// with every parameter NULL (a kept plan does not depend on the values).
async fn kept_plan(connection: &mut sqlx::PgConnection, name: &str, sql: &str) -> String {
    let parameters = (1..=99)
        .take_while(|n| sql.contains(&format!("${n}")))
        .map(|_| "NULL")
        .collect::<Vec<_>>()
        .join(", ");
    connection
        .execute(format!("PREPARE {name} AS {sql}").as_str())
        .await
        .unwrap_or_else(|e| panic!("{name} prepares: {e}"));
    let lines = sqlx::query(&format!("EXPLAIN (COSTS OFF) EXECUTE {name}({parameters})"))
        .fetch_all(&mut *connection)
        .await
        .unwrap();
    lines
        .iter()
        .map(|line| line.get::<String, _>(0))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every scan of a2a_tasks in `plan`.
fn task_scans(plan: &str) -> Vec<&str> {
    plan.lines()
        .filter(|line| line.contains(" on a2a_tasks") && line.contains("Scan"))
        .map(str::trim)
        .collect()
}

#[tokio::test]
async fn kept_plans_made_on_empty_tables_find_tasks_by_index() {
    let Some((url, admin, schema)) = super::test_schema("a2a_plans").await else {
        return;
    };
    let separator = if url.contains('?') { '&' } else { '?' };
    let store = PostgresTaskStore::open(&format!(
        "{url}{separator}options=-c%20search_path%3D{schema}"
    ))
    .await
    .unwrap();

    let writes = [
        ("one_create", super::one_statement::CREATE),
        ("one_update", super::one_statement::UPDATE),
        ("group_create", super::group::CREATE_MANY),
        ("group_update", super::group::UPDATE_MANY),
        (
            "group_create_and_update",
            super::create_and_update::CREATE_AND_UPDATE_MANY.as_str(),
        ),
    ];
    let listing = format!(
        "SELECT body, generation FROM a2a_tasks WHERE tenant = $1 AND {LISTED} \
         ORDER BY status_millis DESC, id DESC LIMIT $2"
    );
    let retention =
        "SELECT tenant, id FROM a2a_tasks WHERE terminal = TRUE AND updated_millis < $1 LIMIT $2";

    for analyzed in [false, true] {
        // A connection of the store's own pool, with its settings; plans kept at once.
        let mut connection = store.pool().acquire().await.unwrap();
        connection
            .execute("SET plan_cache_mode = force_generic_plan")
            .await
            .unwrap();
        if analyzed {
            connection.execute("ANALYZE").await.unwrap();
        }
        let when = if analyzed { "analyzed" } else { "new" };
        for (name, sql) in writes {
            let plan = kept_plan(&mut connection, &format!("{name}_{when}"), sql).await;
            assert!(
                !plan.contains("Seq Scan"),
                "{name} on {when} empty tables scans a table:\n{plan}"
            );
            let scans = task_scans(&plan);
            assert!(
                !scans.is_empty() || !sql.contains("UPDATE a2a_tasks"),
                "{name}: no scan of a2a_tasks in\n{plan}"
            );
            for scan in scans {
                assert!(
                    scan.contains("a2a_tasks_pkey"),
                    "{name} on {when} empty tables finds tasks by another index: {scan}\n{plan}"
                );
            }
        }
        for (name, sql, index) in [
            ("listing", listing.as_str(), "a2a_tasks_by_status_time"),
            ("retention", retention, "a2a_tasks_for_retention"),
        ] {
            let plan = kept_plan(&mut connection, &format!("{name}_{when}"), sql).await;
            assert!(
                plan.contains(index),
                "{name} on {when} empty tables does not use {index}:\n{plan}"
            );
        }
        connection.execute("DEALLOCATE ALL").await.unwrap();
    }

    drop(store);
    super::drop_schema(admin, schema).await;
}
