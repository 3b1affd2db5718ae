//! The indexes SQLite chooses for ListTasks: each filter's own, read in list order (migration
//! 0006), not the tenant's time index walked past every other task.

use crate::store::SqliteTaskStore;
use crate::store::sql::LISTED;

#[tokio::test]
async fn a_page_of_one_context_or_state_is_read_from_its_own_index() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("plans.db").display());
    let store = SqliteTaskStore::open(&url).await.unwrap();
    for (filter, index) in [
        ("context_id = ?2", "a2a_tasks_by_context"),
        ("state = ?2", "a2a_tasks_by_state"),
    ] {
        let sql = format!(
            "EXPLAIN QUERY PLAN SELECT body, generation FROM a2a_tasks \
             WHERE tenant = ?1 AND {LISTED} AND {filter} \
             ORDER BY status_millis DESC, id DESC LIMIT ?3"
        );
        let plan = store
            .database
            .read(move |connection| {
                let mut statement = connection.prepare(&sql).unwrap();
                let details = statement
                    .query_map(rusqlite::params!["", "x", 10], |row| {
                        row.get::<_, String>("detail")
                    })
                    .unwrap()
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap();
                Ok(details.join("\n"))
            })
            .await
            .unwrap();
        assert!(
            plan.contains(index) && !plan.contains("TEMP B-TREE"),
            "a page filtered on {filter} is not read in order from {index}:\n{plan}"
        );
    }
}
