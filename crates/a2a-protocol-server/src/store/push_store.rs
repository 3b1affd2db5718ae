//! [`PushStore`]: push notification configs, kept with their tasks, and the outbox of the
//! notifications their tasks' events make.

use std::time::Duration;

use a2a_protocol_types::TaskId;
use a2a_protocol_types::push::TaskPushNotificationConfig;
use async_trait::async_trait;

use super::{DeliverySettled, PushConfigSaved, PushDelivery, StoreError};

/// Push notification configs and their outbox. A store that keeps them offers them through
/// [`Capabilities::push`](super::Capabilities::push); a server over a store without them
/// answers every push operation with `PushNotificationNotSupported` and says so on its card.
///
/// The outbox is filled by [`TaskStore::write`](super::TaskStore::write): each event it records
/// queues a notification per config of its task, in the same atomic step, and a config sent
/// with a message ([`TaskWrite::push_config`](super::TaskWrite::push_config)) is saved with it.
#[async_trait]
pub trait PushStore: Send + Sync {
    /// Saves `config` for its task (`config.task_id`), replacing the task's config with the
    /// same id. The config goes with its task: a task deleted (by retention, say) takes its
    /// configs along. A new id is refused once the task has `max_per_task` configs.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::{InMemoryTaskStore, PushConfigSaved, PushStore, TaskStore, TaskWrite};
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
    /// store.write(&TaskWrite::create("", &task)).await?;
    /// let config: TaskPushNotificationConfig = serde_json::from_str(
    ///     r#"{"id": "cfg-1", "taskId": "t-1", "url": "https://client.example/hook"}"#,
    /// )?;
    /// assert_eq!(store.save_push_config("", &config, 10).await?, PushConfigSaved::Saved);
    /// let mut other = config.clone();
    /// other.task_id = "t-2".into();
    /// assert_eq!(store.save_push_config("", &other, 10).await?, PushConfigSaved::TaskMissing);
    /// # Ok(())
    /// # }
    /// ```
    async fn save_push_config(
        &self,
        tenant: &str,
        config: &TaskPushNotificationConfig,
        max_per_task: usize,
    ) -> Result<PushConfigSaved, StoreError>;

    /// The config `id` of task `task_id`, if there is one.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, PushStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// assert_eq!(store.get_push_config("", &"t-1".into(), "cfg-1").await?, None);
    /// # Ok(())
    /// # }
    /// ```
    async fn get_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError>;

    /// Up to `limit` configs of task `task_id`, in order of id, starting after id `after`
    /// (from the first when `None`).
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, PushStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// assert!(store.list_push_configs("", &"t-1".into(), None, 10).await?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    async fn list_push_configs(
        &self,
        tenant: &str,
        task_id: &TaskId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError>;

    /// Deletes the config `id` of task `task_id`; whether there was one.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, PushStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// assert!(!store.delete_push_config("", &"t-1".into(), "cfg-1").await?, "nothing to delete");
    /// # Ok(())
    /// # }
    /// ```
    async fn delete_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<bool, StoreError>;

    /// Claims up to `limit` notifications that are due, for `claimant` (a server process)
    /// for `lease`: no other claimant gets them until the lease runs out or `claimant`
    /// settles them. Only the oldest waiting notification of each task and config is due, so
    /// a webhook receives a task's events in order. A store that keeps push configs keeps
    /// this outbox too: [`TaskStore::write`](super::TaskStore::write) queues a notification per config of the task
    /// in the same step that records each event ([`TaskWrite::events`](super::TaskWrite::events)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::{DeliverySettled, InMemoryTaskStore, PushStore, TaskStore, TaskWrite};
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    /// use a2a_protocol_types::{StreamResponse, Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Submitted));
    /// store.write(&TaskWrite::create("", &Arc::new(task.clone()))).await?;
    /// let config: TaskPushNotificationConfig =
    ///     serde_json::from_str(r#"{"id": "cfg-1", "taskId": "t-1", "url": "https://client.example/hook"}"#)?;
    /// store.save_push_config("", &config, 10).await?;
    ///
    /// task.status = TaskStatus::new(TaskState::Completed);
    /// task.generation = 2;
    /// let event = StreamResponse::Task(task.clone());
    /// store.write(&TaskWrite::update("", &Arc::new(task), 1).with_event(&event)).await?;
    ///
    /// let lease = Duration::from_secs(30);
    /// let claimed = store.claim_push_deliveries("p-1", lease, 10).await?;
    /// assert_eq!(claimed[0].delivery_id(), "t-1:cfg-1:2");
    /// assert!(store.claim_push_deliveries("p-2", lease, 10).await?.is_empty(), "claimed by p-1");
    /// store.settle_push_delivery("p-1", &claimed[0], &DeliverySettled::Delivered).await?;
    /// # Ok(())
    /// # }
    /// ```
    async fn claim_push_deliveries(
        &self,
        claimant: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<PushDelivery>, StoreError>;

    /// Records how an attempt at a notification `claimant` claimed ended: delivered (it
    /// leaves the outbox), to be retried later, or dead (kept for
    /// [`PushStore::dead_push_deliveries`]). Nothing happens if the claim has passed to
    /// another claimant meanwhile.
    ///
    /// ```
    /// use a2a_protocol_server::store::{DeliverySettled, InMemoryTaskStore, PushDelivery, PushStore};
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    /// use a2a_protocol_types::{StreamResponse, Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config: TaskPushNotificationConfig =
    ///     serde_json::from_str(r#"{"id": "cfg-1", "taskId": "t-1", "url": "https://client.example/hook"}"#)?;
    /// let event = StreamResponse::Task(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
    /// let unclaimed = PushDelivery::new("", config, 2, event);
    /// let store = InMemoryTaskStore::new();
    /// store.settle_push_delivery("p-1", &unclaimed, &DeliverySettled::Delivered).await?; // nothing to do
    /// # Ok(())
    /// # }
    /// ```
    async fn settle_push_delivery(
        &self,
        claimant: &str,
        delivery: &PushDelivery,
        settled: &DeliverySettled,
    ) -> Result<(), StoreError>;

    /// Up to `limit` notifications that were given up on, newest first.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, PushStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// assert!(InMemoryTaskStore::new().dead_push_deliveries(10).await?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    async fn dead_push_deliveries(&self, limit: usize) -> Result<Vec<PushDelivery>, StoreError>;
}
