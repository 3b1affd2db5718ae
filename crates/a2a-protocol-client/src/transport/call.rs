//! One call as a [`Transport`](super::Transport) gets it, and its answer, typed: each binding
//! turns the request into its wire form once and the answer back once.

use a2a_protocol_types::push::{
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};
use a2a_protocol_types::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest, Task,
};

use crate::error::ClientError;
use crate::operation::Operation;

/// One call of an operation, with its request.
///
/// ```
/// use a2a_protocol_client::{Call, Operation};
/// use a2a_protocol_types::GetTaskRequest;
///
/// let call = Call::GetTask(GetTaskRequest { id: "t-1".into(), ..Default::default() });
/// assert_eq!(call.operation(), Operation::GetTask);
/// assert!(call.tenant().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Call {
    /// `SendMessage`.
    SendMessage(SendMessageRequest),
    /// `SendStreamingMessage`.
    SendStreamingMessage(SendMessageRequest),
    /// `GetTask`.
    GetTask(GetTaskRequest),
    /// `ListTasks`.
    ListTasks(ListTasksRequest),
    /// `CancelTask`.
    CancelTask(CancelTaskRequest),
    /// `SubscribeToTask`.
    SubscribeToTask(SubscribeToTaskRequest),
    /// `CreateTaskPushNotificationConfig`.
    CreateTaskPushNotificationConfig(TaskPushNotificationConfig),
    /// `GetTaskPushNotificationConfig`.
    GetTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest),
    /// `ListTaskPushNotificationConfigs`.
    ListTaskPushNotificationConfigs(ListTaskPushNotificationConfigsRequest),
    /// `DeleteTaskPushNotificationConfig`.
    DeleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest),
    /// `GetExtendedAgentCard`.
    GetExtendedAgentCard(GetExtendedAgentCardRequest),
}

impl Call {
    /// The operation called.
    pub fn operation(&self) -> Operation {
        match self {
            Call::SendMessage(_) => Operation::SendMessage,
            Call::SendStreamingMessage(_) => Operation::SendStreamingMessage,
            Call::GetTask(_) => Operation::GetTask,
            Call::ListTasks(_) => Operation::ListTasks,
            Call::CancelTask(_) => Operation::CancelTask,
            Call::SubscribeToTask(_) => Operation::SubscribeToTask,
            Call::CreateTaskPushNotificationConfig(_) => {
                Operation::CreateTaskPushNotificationConfig
            }
            Call::GetTaskPushNotificationConfig(_) => Operation::GetTaskPushNotificationConfig,
            Call::ListTaskPushNotificationConfigs(_) => Operation::ListTaskPushNotificationConfigs,
            Call::DeleteTaskPushNotificationConfig(_) => {
                Operation::DeleteTaskPushNotificationConfig
            }
            Call::GetExtendedAgentCard(_) => Operation::GetExtendedAgentCard,
        }
    }

    /// The tenant the call is for; empty for none.
    pub fn tenant(&self) -> &str {
        match self {
            Call::SendMessage(r) | Call::SendStreamingMessage(r) => &r.tenant,
            Call::GetTask(r) => &r.tenant,
            Call::ListTasks(r) => &r.tenant,
            Call::CancelTask(r) => &r.tenant,
            Call::SubscribeToTask(r) => &r.tenant,
            Call::CreateTaskPushNotificationConfig(r) => &r.tenant,
            Call::GetTaskPushNotificationConfig(r) => &r.tenant,
            Call::ListTaskPushNotificationConfigs(r) => &r.tenant,
            Call::DeleteTaskPushNotificationConfig(r) => &r.tenant,
            Call::GetExtendedAgentCard(r) => &r.tenant,
        }
    }

    /// Sets the tenant when the request names none.
    pub(crate) fn default_tenant(&mut self, tenant: &str) {
        let own = match self {
            Call::SendMessage(r) | Call::SendStreamingMessage(r) => &mut r.tenant,
            Call::GetTask(r) => &mut r.tenant,
            Call::ListTasks(r) => &mut r.tenant,
            Call::CancelTask(r) => &mut r.tenant,
            Call::SubscribeToTask(r) => &mut r.tenant,
            Call::CreateTaskPushNotificationConfig(r) => &mut r.tenant,
            Call::GetTaskPushNotificationConfig(r) => &mut r.tenant,
            Call::ListTaskPushNotificationConfigs(r) => &mut r.tenant,
            Call::DeleteTaskPushNotificationConfig(r) => &mut r.tenant,
            Call::GetExtendedAgentCard(r) => &mut r.tenant,
        };
        if own.is_empty() {
            tenant.clone_into(own);
        }
    }
}

/// What a unary call answers.
///
/// ```
/// use a2a_protocol_client::Answer;
/// use a2a_protocol_types::{Message, SendMessageResponse};
///
/// let answer = Answer::Sent(SendMessageResponse::Message(Message::agent_text("hi")));
/// assert!(matches!(answer, Answer::Sent(SendMessageResponse::Message(_))));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Answer {
    /// `SendMessage`'s: the task, or a direct reply.
    Sent(SendMessageResponse),
    /// `GetTask`'s and `CancelTask`'s.
    Task(Task),
    /// `ListTasks`'s.
    Tasks(ListTasksResponse),
    /// `CreateTaskPushNotificationConfig`'s and `GetTaskPushNotificationConfig`'s.
    PushConfig(TaskPushNotificationConfig),
    /// `ListTaskPushNotificationConfigs`'s.
    PushConfigs(ListTaskPushNotificationConfigsResponse),
    /// `DeleteTaskPushNotificationConfig`'s, which carries nothing.
    Deleted,
    /// `GetExtendedAgentCard`'s.
    AgentCard(AgentCard),
}

/// The error for an answer a transport gave to `operation` that is not of its kind.
pub(crate) fn mismatched(operation: Operation) -> ClientError {
    ClientError::Decode(format!(
        "the transport answered {} with an answer of another operation",
        operation.method()
    ))
}
