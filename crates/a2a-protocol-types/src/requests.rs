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
///
/// ```
/// use a2a_protocol_types::SendMessageConfiguration;
///
/// let configuration = SendMessageConfiguration {
///     return_immediately: true,
///     history_length: Some(0),
///     ..SendMessageConfiguration::default()
/// };
/// let json = serde_json::to_value(&configuration).unwrap();
/// assert_eq!((json["returnImmediately"].as_bool(), json["historyLength"].as_i64()), (Some(true), Some(0)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client accepts in the answer.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    /// A webhook for updates on the task this send creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// How many history messages to return (spec §3.2.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// Return once the task exists instead of waiting for it to settle.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "serde_util::is_false")]
    #[serde(alias = "return_immediately")]
    pub return_immediately: bool,
}

/// `SendMessage` and `SendStreamingMessage`.
///
/// ```
/// use a2a_protocol_types::SendMessageRequest;
///
/// let request: SendMessageRequest = serde_json::from_str(
///     r#"{"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
///         "configuration": {"returnImmediately": true}}"#,
/// )
/// .unwrap();
/// assert!(request.returns_immediately());
/// ```
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
    ///
    /// ```
    /// use a2a_protocol_types::{Message, SendMessageRequest};
    ///
    /// let request = SendMessageRequest::new(Message::user_text("hi"));
    /// assert_eq!(serde_json::to_value(&request).unwrap()["message"]["parts"][0]["text"], "hi");
    /// ```
    pub fn new(message: Message) -> Self {
        Self {
            tenant: String::new(),
            message,
            configuration: None,
            metadata: None,
        }
    }

    /// Whether the caller asked to get the task back before it settles.
    ///
    /// ```
    /// use a2a_protocol_types::{Message, SendMessageRequest};
    ///
    /// assert!(!SendMessageRequest::new(Message::user_text("hi")).returns_immediately(), "blocking by default");
    /// ```
    pub fn returns_immediately(&self) -> bool {
        self.configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately)
    }

    /// The requested history length, if any.
    ///
    /// ```
    /// use a2a_protocol_types::{Message, SendMessageConfiguration, SendMessageRequest};
    ///
    /// let mut request = SendMessageRequest::new(Message::user_text("hi"));
    /// assert_eq!(request.history_length(), None);
    /// request.configuration =
    ///     Some(SendMessageConfiguration { history_length: Some(5), ..Default::default() });
    /// assert_eq!(request.history_length(), Some(5));
    /// ```
    pub fn history_length(&self) -> Option<i32> {
        self.configuration.as_ref().and_then(|c| c.history_length)
    }

    /// Asks the agent to POST the task's updates to a webhook
    /// (`configuration.taskPushNotificationConfig`), registered before the agent starts, so
    /// even its first update is delivered.
    ///
    /// ```
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    /// use a2a_protocol_types::{Message, SendMessageRequest};
    ///
    /// let hook = TaskPushNotificationConfig::new("https://client.example/hook").with_token("t-42");
    /// let request = SendMessageRequest::new(Message::user_text("hi")).with_push_config(hook);
    /// let wire = serde_json::to_value(&request).unwrap();
    /// assert_eq!(wire["configuration"]["taskPushNotificationConfig"]["url"], "https://client.example/hook");
    /// ```
    pub fn with_push_config(mut self, config: TaskPushNotificationConfig) -> Self {
        self.configuration
            .get_or_insert_with(SendMessageConfiguration::default)
            .task_push_notification_config = Some(config);
        self
    }
}

/// The answer to `SendMessage`: a task, or a direct message.
///
/// ```
/// use a2a_protocol_types::{Message, SendMessageResponse};
///
/// let answer = SendMessageResponse::Message(Message::agent_text("hi"));
/// let json = serde_json::to_value(&answer).unwrap();
/// assert_eq!(json["message"]["parts"][0]["text"], "hi");
/// let back: SendMessageResponse = serde_json::from_value(json).unwrap();
/// assert_eq!(back, answer);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// The task the send created or continued.
    Task(Task),
    /// A direct reply; no task was created.
    Message(Message),
}

/// `GetTask`.
///
/// ```
/// use a2a_protocol_types::GetTaskRequest;
///
/// let request = GetTaskRequest { id: "t-1".into(), history_length: Some(2), ..Default::default() };
/// assert_eq!(serde_json::to_string(&request).unwrap(), r#"{"id":"t-1","historyLength":2}"#);
/// ```
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
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
}

/// `ListTasks`: every filter is optional.
///
/// ```
/// use a2a_protocol_types::{ListTasksRequest, TaskState};
///
/// let request = ListTasksRequest {
///     context_id: Some("c-1".into()),
///     status: Some(TaskState::Working),
///     page_size: Some(20),
///     ..Default::default()
/// };
/// let json = serde_json::to_value(&request).unwrap();
/// assert_eq!(json["status"], "TASK_STATE_WORKING");
/// ```
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
    #[serde(alias = "context_id")]
    pub context_id: Option<ContextId>,
    /// Only tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// At most this many tasks (1–100; the server's default when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "page_size")]
    pub page_size: Option<i32>,
    /// The `nextPageToken` of the previous page.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "page_token")]
    pub page_token: Option<String>,
    /// How many history messages to return per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// Only tasks whose status changed after this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "status_timestamp_after")]
    pub status_timestamp_after: Option<Timestamp>,
    /// Include each task's artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "include_artifacts")]
    pub include_artifacts: Option<bool>,
}

/// The answer to `ListTasks`. Every field is always written, as the spec's examples show.
///
/// ```
/// use a2a_protocol_types::ListTasksResponse;
///
/// let page: ListTasksResponse =
///     serde_json::from_str(r#"{"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}"#).unwrap();
/// assert!(page.tasks.is_empty() && page.next_page_token.is_empty(), "the last page");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// This page of tasks.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub tasks: Vec<Task>,
    /// Pass as `pageToken` for the next page; empty on the last page.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
    /// The page size used.
    #[serde(default)]
    #[serde(alias = "page_size")]
    pub page_size: i32,
    /// How many tasks match the filters in all.
    #[serde(default)]
    #[serde(alias = "total_size")]
    pub total_size: i32,
}

/// `CancelTask`.
///
/// ```
/// use a2a_protocol_types::CancelTaskRequest;
///
/// let request = CancelTaskRequest { id: "t-1".into(), ..Default::default() };
/// assert_eq!(serde_json::to_string(&request).unwrap(), r#"{"id":"t-1"}"#);
/// ```
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
///
/// ```
/// use a2a_protocol_types::SubscribeToTaskRequest;
///
/// let request: SubscribeToTaskRequest = serde_json::from_str(r#"{"id": "t-1", "tenant": "acme"}"#).unwrap();
/// assert_eq!((request.id.as_str(), request.tenant.as_str()), ("t-1", "acme"));
/// ```
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
///
/// ```
/// use a2a_protocol_types::GetTaskPushNotificationConfigRequest;
///
/// let request: GetTaskPushNotificationConfigRequest =
///     serde_json::from_str(r#"{"taskId": "t-1", "id": "cfg-1"}"#).unwrap();
/// assert_eq!(request.id, "cfg-1");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPushNotificationConfigRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: TaskId,
    /// The configuration.
    pub id: String,
}

/// `DeleteTaskPushNotificationConfig`.
///
/// ```
/// use a2a_protocol_types::DeleteTaskPushNotificationConfigRequest;
///
/// let request: DeleteTaskPushNotificationConfigRequest =
///     serde_json::from_str(r#"{"taskId": "t-1", "id": "cfg-1"}"#).unwrap();
/// assert_eq!(request.task_id.as_str(), "t-1");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteTaskPushNotificationConfigRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: TaskId,
    /// The configuration.
    pub id: String,
}

/// `ListTaskPushNotificationConfigs`.
///
/// ```
/// use a2a_protocol_types::ListTaskPushNotificationConfigsRequest;
///
/// let request = ListTaskPushNotificationConfigsRequest { task_id: "t-1".into(), ..Default::default() };
/// assert_eq!(serde_json::to_string(&request).unwrap(), r#"{"taskId":"t-1"}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: TaskId,
    /// At most this many configurations; the server's default when 0.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "is_zero")]
    #[serde(alias = "page_size")]
    pub page_size: i32,
    /// The `nextPageToken` of the previous page.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(alias = "page_token")]
    pub page_token: String,
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}

/// `GetExtendedAgentCard`.
///
/// ```
/// use a2a_protocol_types::GetExtendedAgentCardRequest;
///
/// assert_eq!(serde_json::to_string(&GetExtendedAgentCardRequest::default()).unwrap(), "{}");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
}
