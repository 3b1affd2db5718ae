//! Requests and responses of the eleven operations, and push notification configs.

use a2a_protocol_types::push::{
    AuthenticationInfo, ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};
use a2a_protocol_types::{
    CancelTaskRequest, ContextId, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, ListTasksResponse, Message,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest,
    Task, TaskId, TaskState,
};

use super::task::state;
use super::{ProtoError, from_metadata, from_timestamp, required, some, to_metadata, to_timestamp};
use crate::pb;

impl From<AuthenticationInfo> for pb::AuthenticationInfo {
    fn from(info: AuthenticationInfo) -> Self {
        pb::AuthenticationInfo {
            scheme: info.scheme,
            credentials: info.credentials.unwrap_or_default(),
        }
    }
}

impl From<pb::AuthenticationInfo> for AuthenticationInfo {
    fn from(info: pb::AuthenticationInfo) -> Self {
        AuthenticationInfo {
            scheme: info.scheme,
            credentials: some(info.credentials),
        }
    }
}

impl From<TaskPushNotificationConfig> for pb::TaskPushNotificationConfig {
    fn from(config: TaskPushNotificationConfig) -> Self {
        pb::TaskPushNotificationConfig {
            tenant: config.tenant,
            id: config.id,
            task_id: config.task_id.into_string(),
            url: config.url,
            token: config.token.unwrap_or_default(),
            authentication: config.authentication.map(Into::into),
        }
    }
}

impl From<pb::TaskPushNotificationConfig> for TaskPushNotificationConfig {
    fn from(config: pb::TaskPushNotificationConfig) -> Self {
        TaskPushNotificationConfig {
            tenant: config.tenant,
            id: config.id,
            task_id: TaskId::new(config.task_id),
            url: config.url,
            token: some(config.token),
            authentication: config.authentication.map(Into::into),
        }
    }
}

impl From<ListTaskPushNotificationConfigsResponse> for pb::ListTaskPushNotificationConfigsResponse {
    fn from(response: ListTaskPushNotificationConfigsResponse) -> Self {
        pb::ListTaskPushNotificationConfigsResponse {
            configs: response.configs.into_iter().map(Into::into).collect(),
            next_page_token: response.next_page_token,
        }
    }
}

impl From<pb::ListTaskPushNotificationConfigsResponse> for ListTaskPushNotificationConfigsResponse {
    fn from(response: pb::ListTaskPushNotificationConfigsResponse) -> Self {
        ListTaskPushNotificationConfigsResponse {
            configs: response.configs.into_iter().map(Into::into).collect(),
            next_page_token: response.next_page_token,
        }
    }
}

impl From<SendMessageConfiguration> for pb::SendMessageConfiguration {
    fn from(configuration: SendMessageConfiguration) -> Self {
        pb::SendMessageConfiguration {
            accepted_output_modes: configuration.accepted_output_modes,
            task_push_notification_config: configuration
                .task_push_notification_config
                .map(Into::into),
            history_length: configuration.history_length,
            return_immediately: configuration.return_immediately,
        }
    }
}

impl From<pb::SendMessageConfiguration> for SendMessageConfiguration {
    fn from(configuration: pb::SendMessageConfiguration) -> Self {
        SendMessageConfiguration {
            accepted_output_modes: configuration.accepted_output_modes,
            task_push_notification_config: configuration
                .task_push_notification_config
                .map(Into::into),
            history_length: configuration.history_length,
            return_immediately: configuration.return_immediately,
        }
    }
}

impl From<SendMessageRequest> for pb::SendMessageRequest {
    fn from(request: SendMessageRequest) -> Self {
        pb::SendMessageRequest {
            tenant: request.tenant,
            message: Some(request.message.into()),
            configuration: request.configuration.map(Into::into),
            metadata: to_metadata(request.metadata.as_ref()),
        }
    }
}

impl TryFrom<pb::SendMessageRequest> for SendMessageRequest {
    type Error = ProtoError;

    fn try_from(request: pb::SendMessageRequest) -> Result<Self, ProtoError> {
        Ok(SendMessageRequest {
            tenant: request.tenant,
            message: required(request.message, "SendMessageRequest.message")?.try_into()?,
            configuration: request.configuration.map(Into::into),
            metadata: from_metadata(request.metadata),
        })
    }
}

impl From<SendMessageResponse> for pb::SendMessageResponse {
    fn from(response: SendMessageResponse) -> Self {
        use pb::send_message_response::Payload;
        let payload = match response {
            SendMessageResponse::Task(task) => Payload::Task(task.into()),
            SendMessageResponse::Message(message) => Payload::Message(message.into()),
        };
        pb::SendMessageResponse {
            payload: Some(payload),
        }
    }
}

impl TryFrom<pb::SendMessageResponse> for SendMessageResponse {
    type Error = ProtoError;

    fn try_from(response: pb::SendMessageResponse) -> Result<Self, ProtoError> {
        use pb::send_message_response::Payload;
        Ok(
            match required(response.payload, "SendMessageResponse.payload")? {
                Payload::Task(task) => SendMessageResponse::Task(Task::try_from(task)?),
                Payload::Message(message) => {
                    SendMessageResponse::Message(Message::try_from(message)?)
                }
            },
        )
    }
}

impl From<GetTaskRequest> for pb::GetTaskRequest {
    fn from(request: GetTaskRequest) -> Self {
        pb::GetTaskRequest {
            tenant: request.tenant,
            id: request.id.into_string(),
            history_length: request.history_length,
        }
    }
}

impl From<pb::GetTaskRequest> for GetTaskRequest {
    fn from(request: pb::GetTaskRequest) -> Self {
        GetTaskRequest {
            tenant: request.tenant,
            id: TaskId::new(request.id),
            history_length: request.history_length,
        }
    }
}

impl From<ListTasksRequest> for pb::ListTasksRequest {
    fn from(request: ListTasksRequest) -> Self {
        pb::ListTasksRequest {
            tenant: request.tenant,
            context_id: request
                .context_id
                .map(ContextId::into_string)
                .unwrap_or_default(),
            status: request.status.unwrap_or(TaskState::Unspecified).number(),
            page_size: request.page_size,
            page_token: request.page_token.unwrap_or_default(),
            history_length: request.history_length,
            status_timestamp_after: request.status_timestamp_after.map(to_timestamp),
            include_artifacts: request.include_artifacts,
        }
    }
}

impl TryFrom<pb::ListTasksRequest> for ListTasksRequest {
    type Error = ProtoError;

    fn try_from(request: pb::ListTasksRequest) -> Result<Self, ProtoError> {
        Ok(ListTasksRequest {
            tenant: request.tenant,
            context_id: some(request.context_id).map(ContextId::new),
            status: Some(state(request.status)).filter(|s| *s != TaskState::Unspecified),
            page_size: request.page_size,
            page_token: some(request.page_token),
            history_length: request.history_length,
            status_timestamp_after: request
                .status_timestamp_after
                .map(|t| from_timestamp(t, "ListTasksRequest.status_timestamp_after"))
                .transpose()?,
            include_artifacts: request.include_artifacts,
        })
    }
}

impl From<ListTasksResponse> for pb::ListTasksResponse {
    fn from(response: ListTasksResponse) -> Self {
        pb::ListTasksResponse {
            tasks: response.tasks.into_iter().map(Into::into).collect(),
            next_page_token: response.next_page_token,
            page_size: response.page_size,
            total_size: response.total_size,
        }
    }
}

impl TryFrom<pb::ListTasksResponse> for ListTasksResponse {
    type Error = ProtoError;

    fn try_from(response: pb::ListTasksResponse) -> Result<Self, ProtoError> {
        Ok(ListTasksResponse {
            tasks: response
                .tasks
                .into_iter()
                .map(Task::try_from)
                .collect::<Result<_, _>>()?,
            next_page_token: response.next_page_token,
            page_size: response.page_size,
            total_size: response.total_size,
        })
    }
}

impl From<CancelTaskRequest> for pb::CancelTaskRequest {
    fn from(request: CancelTaskRequest) -> Self {
        pb::CancelTaskRequest {
            tenant: request.tenant,
            id: request.id.into_string(),
            metadata: to_metadata(request.metadata.as_ref()),
        }
    }
}

impl From<pb::CancelTaskRequest> for CancelTaskRequest {
    fn from(request: pb::CancelTaskRequest) -> Self {
        CancelTaskRequest {
            tenant: request.tenant,
            id: TaskId::new(request.id),
            metadata: from_metadata(request.metadata),
        }
    }
}

impl From<SubscribeToTaskRequest> for pb::SubscribeToTaskRequest {
    fn from(request: SubscribeToTaskRequest) -> Self {
        pb::SubscribeToTaskRequest {
            tenant: request.tenant,
            id: request.id.into_string(),
        }
    }
}

impl From<pb::SubscribeToTaskRequest> for SubscribeToTaskRequest {
    fn from(request: pb::SubscribeToTaskRequest) -> Self {
        SubscribeToTaskRequest {
            tenant: request.tenant,
            id: TaskId::new(request.id),
        }
    }
}

/// The push config requests that name a config of a task: the same three fields both ways.
macro_rules! config_request {
    ($($name:ident),+) => {$(
        impl From<$name> for pb::$name {
            fn from(request: $name) -> Self {
                pb::$name {
                    tenant: request.tenant,
                    task_id: request.task_id.into_string(),
                    id: request.id,
                }
            }
        }

        impl From<pb::$name> for $name {
            fn from(request: pb::$name) -> Self {
                $name {
                    tenant: request.tenant,
                    task_id: TaskId::new(request.task_id),
                    id: request.id,
                }
            }
        }
    )+};
}

config_request!(
    GetTaskPushNotificationConfigRequest,
    DeleteTaskPushNotificationConfigRequest
);

impl From<ListTaskPushNotificationConfigsRequest> for pb::ListTaskPushNotificationConfigsRequest {
    fn from(request: ListTaskPushNotificationConfigsRequest) -> Self {
        pb::ListTaskPushNotificationConfigsRequest {
            tenant: request.tenant,
            task_id: request.task_id.into_string(),
            page_size: request.page_size,
            page_token: request.page_token,
        }
    }
}

impl From<pb::ListTaskPushNotificationConfigsRequest> for ListTaskPushNotificationConfigsRequest {
    fn from(request: pb::ListTaskPushNotificationConfigsRequest) -> Self {
        ListTaskPushNotificationConfigsRequest {
            tenant: request.tenant,
            task_id: TaskId::new(request.task_id),
            page_size: request.page_size,
            page_token: request.page_token,
        }
    }
}

impl From<GetExtendedAgentCardRequest> for pb::GetExtendedAgentCardRequest {
    fn from(request: GetExtendedAgentCardRequest) -> Self {
        pb::GetExtendedAgentCardRequest {
            tenant: request.tenant,
        }
    }
}

impl From<pb::GetExtendedAgentCardRequest> for GetExtendedAgentCardRequest {
    fn from(request: pb::GetExtendedAgentCardRequest) -> Self {
        GetExtendedAgentCardRequest {
            tenant: request.tenant,
        }
    }
}
