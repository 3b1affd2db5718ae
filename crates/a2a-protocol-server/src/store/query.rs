//! What `ListTasks` asks a store for, and the page it answers.

use a2a_protocol_types::{ContextId, Task, TaskState, Timestamp};

use super::PageCursor;

/// Which tasks `ListTasks` wants, already validated.
///
/// ```
/// use a2a_protocol_server::store::TaskQuery;
/// use a2a_protocol_types::TaskState;
///
/// let query = TaskQuery { status: Some(TaskState::Working), page_size: 20, ..TaskQuery::default() };
/// assert!(query.cursor.is_none(), "the first page");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskQuery {
    /// Only tasks in this context.
    pub context_id: Option<ContextId>,
    /// Only tasks in this state.
    pub status: Option<TaskState>,
    /// Only tasks whose status changed after this time.
    pub status_timestamp_after: Option<Timestamp>,
    /// Page size, 1..=100.
    pub page_size: usize,
    /// Where the previous page ended.
    pub cursor: Option<PageCursor>,
    /// Only tasks this authenticated caller created ([`StoredTask::caller`](super::StoredTask::caller)); `None` lists
    /// every caller's tasks.
    pub caller: Option<String>,
}

/// One page of tasks, newest status first.
///
/// ```
/// use std::sync::Arc;
///
/// use a2a_protocol_server::store::{InMemoryTaskStore, TaskQuery, TaskStore, TaskWrite};
/// use a2a_protocol_types::{Task, TaskState, TaskStatus};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = InMemoryTaskStore::new();
/// for id in ["t-1", "t-2", "t-3"] {
///     let task = Arc::new(Task::new(id, "c-1", TaskStatus::new(TaskState::Completed)));
///     store.write(&TaskWrite::create("", &task)).await?;
/// }
/// let page = store.list("", &TaskQuery { page_size: 2, ..TaskQuery::default() }).await?;
/// assert_eq!((page.tasks.len(), page.total_size), (2, 3));
/// let rest = store.list("", &TaskQuery { page_size: 2, cursor: page.next, ..TaskQuery::default() }).await?;
/// assert_eq!(rest.tasks.len(), 1);
/// assert!(rest.next.is_none(), "the last page");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskPage {
    /// The tasks.
    pub tasks: Vec<Task>,
    /// Where this page ended, when more tasks follow.
    pub next: Option<PageCursor>,
    /// How many tasks match the query in all.
    pub total_size: usize,
}
