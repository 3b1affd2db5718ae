//! The eleven operations: their names on each binding, and whether repeating one is harmless.

use a2a_protocol_types::jsonrpc::methods;

/// An A2A operation.
///
/// ```
/// use a2a_protocol_client::Operation;
///
/// assert!(Operation::CancelTask.is_repeatable());
/// assert!(!Operation::SendMessage.is_repeatable());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `SendMessage`.
    SendMessage,
    /// `SendStreamingMessage`.
    SendStreamingMessage,
    /// `GetTask`.
    GetTask,
    /// `ListTasks`.
    ListTasks,
    /// `CancelTask`.
    CancelTask,
    /// `SubscribeToTask`.
    SubscribeToTask,
    /// `CreateTaskPushNotificationConfig`.
    CreateTaskPushNotificationConfig,
    /// `GetTaskPushNotificationConfig`.
    GetTaskPushNotificationConfig,
    /// `ListTaskPushNotificationConfigs`.
    ListTaskPushNotificationConfigs,
    /// `DeleteTaskPushNotificationConfig`.
    DeleteTaskPushNotificationConfig,
    /// `GetExtendedAgentCard`.
    GetExtendedAgentCard,
}

impl Operation {
    /// The JSON-RPC method name.
    ///
    /// ```
    /// use a2a_protocol_client::Operation;
    ///
    /// assert_eq!(Operation::SendStreamingMessage.method(), "SendStreamingMessage");
    /// ```
    pub fn method(self) -> &'static str {
        match self {
            Operation::SendMessage => methods::SEND_MESSAGE,
            Operation::SendStreamingMessage => methods::SEND_STREAMING_MESSAGE,
            Operation::GetTask => methods::GET_TASK,
            Operation::ListTasks => methods::LIST_TASKS,
            Operation::CancelTask => methods::CANCEL_TASK,
            Operation::SubscribeToTask => methods::SUBSCRIBE_TO_TASK,
            Operation::CreateTaskPushNotificationConfig => {
                methods::CREATE_TASK_PUSH_NOTIFICATION_CONFIG
            }
            Operation::GetTaskPushNotificationConfig => methods::GET_TASK_PUSH_NOTIFICATION_CONFIG,
            Operation::ListTaskPushNotificationConfigs => {
                methods::LIST_TASK_PUSH_NOTIFICATION_CONFIGS
            }
            Operation::DeleteTaskPushNotificationConfig => {
                methods::DELETE_TASK_PUSH_NOTIFICATION_CONFIG
            }
            Operation::GetExtendedAgentCard => methods::GET_EXTENDED_AGENT_CARD,
        }
    }

    /// Whether doing it twice has the effect of doing it once: reads, cancels, deletes.
    ///
    /// ```
    /// use a2a_protocol_client::Operation;
    ///
    /// assert!(Operation::GetTask.is_repeatable());
    /// assert!(!Operation::CreateTaskPushNotificationConfig.is_repeatable(), "it would make two");
    /// ```
    pub fn is_repeatable(self) -> bool {
        matches!(
            self,
            Operation::GetTask
                | Operation::ListTasks
                | Operation::CancelTask
                | Operation::SubscribeToTask
                | Operation::GetTaskPushNotificationConfig
                | Operation::ListTaskPushNotificationConfigs
                | Operation::DeleteTaskPushNotificationConfig
                | Operation::GetExtendedAgentCard
        )
    }

    /// Whether it sends a message.
    ///
    /// ```
    /// use a2a_protocol_client::Operation;
    ///
    /// assert!(Operation::SendMessage.is_send() && !Operation::GetTask.is_send());
    /// ```
    pub fn is_send(self) -> bool {
        matches!(
            self,
            Operation::SendMessage | Operation::SendStreamingMessage
        )
    }
}
