//! The request and response objects of the eleven operations (spec §3.1, §3.2).

use serde::{Deserialize, Serialize};

use crate::Metadata;
use crate::ids::{ContextId, TaskId};
use crate::message::Message;
use crate::push::TaskPushNotificationConfig;
use crate::serde_util;
use crate::task::{Task, TaskState};
use crate::timestamp::Timestamp;

/// How a send should be carried out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client accepts in the answer.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    /// A webhook for updates on the task this send creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// How many history messages to return (spec §3.2.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Return once the task exists instead of waiting for it to settle.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "serde_util::is_false")]
    pub return_immediately: bool,
}

/// `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The message to send.
    pub message: Message,
    /// How to carry out the send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Free-form data about the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl SendMessageRequest {
    /// A request that sends `message` with default configuration.
    pub fn new(message: Message) -> Self {
        Self {
            tenant: String::new(),
            message,
            configuration: None,
            metadata: None,
        }
    }

    /// Whether the caller asked to get the task back before it settles.
    pub fn returns_immediately(&self) -> bool {
        self.configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately)
    }

    /// The requested history length, if any.
    pub fn history_length(&self) -> Option<i32> {
        self.configuration.as_ref().and_then(|c| c.history_length)
    }
}

/// The answer to `SendMessage`: a task, or a direct message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// The task the send created or continued.
    Task(Task),
    /// A direct reply; no task was created.
    Message(Message),
}

/// `GetTask`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    pub id: TaskId,
    /// How many history messages to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
}

/// `ListTasks`: every filter is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// Only tasks in this context.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<ContextId>,
    /// Only tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// At most this many tasks (1–100; the server's default when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// The `nextPageToken` of the previous page.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    /// How many history messages to return per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Only tasks whose status changed after this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<Timestamp>,
    /// Include each task's artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

/// The answer to `ListTasks`. Every field is always written, as the spec's examples show.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// This page of tasks.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub tasks: Vec<Task>,
    /// Pass as `pageToken` for the next page; empty on the last page.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub next_page_token: String,
    /// The page size used.
    #[serde(default)]
    pub page_size: i32,
    /// How many tasks match the filters in all.
    #[serde(default)]
    pub total_size: i32,
}

/// `CancelTask`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    pub id: TaskId,
    /// Free-form data about the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `SubscribeToTask`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    pub id: TaskId,
}

/// `GetTaskPushNotificationConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPushNotificationConfigRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    pub task_id: TaskId,
    /// The configuration.
    pub id: String,
}

/// `DeleteTaskPushNotificationConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteTaskPushNotificationConfigRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    pub task_id: TaskId,
    /// The configuration.
    pub id: String,
}

/// `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    pub task_id: TaskId,
    /// At most this many configurations; the server's default when 0.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "is_zero")]
    pub page_size: i32,
    /// The `nextPageToken` of the previous page.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub page_token: String,
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}

/// `GetExtendedAgentCard`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
}
