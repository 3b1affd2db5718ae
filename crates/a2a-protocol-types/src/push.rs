//! Push notification configuration (spec §4.3).

use serde::{Deserialize, Serialize};

use crate::ids::TaskId;
use crate::serde_util;

/// How the agent authenticates to the client's webhook.
///
/// ```
/// use a2a_protocol_types::push::AuthenticationInfo;
///
/// let auth = AuthenticationInfo { scheme: "Bearer".into(), credentials: Some("token".into()) };
/// assert_eq!(serde_json::to_value(&auth).unwrap()["scheme"], "Bearer");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// The HTTP auth scheme, such as `Bearer`.
    pub scheme: String,
    /// The credentials for that scheme.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// A webhook the agent posts task updates to.
///
/// ```
/// use a2a_protocol_types::push::TaskPushNotificationConfig;
///
/// let config: TaskPushNotificationConfig = serde_json::from_str(
///     r#"{"taskId": "t-1", "url": "https://client.example/hook", "token": "secret"}"#,
/// )
/// .unwrap();
/// assert_eq!(config.url, "https://client.example/hook");
/// assert!(config.id.is_empty(), "the server assigns it");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The tenant, if the agent is multi-tenant.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The configuration's id; assigned by the server when empty.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// The task it applies to.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "TaskId::is_empty")]
    #[serde(alias = "task_id")]
    pub task_id: TaskId,
    /// The webhook URL.
    pub url: String,
    /// A token the agent sends back, so the client can check the notification is expected.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How to authenticate to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

impl TaskPushNotificationConfig {
    /// A config for webhook `url`, for the task it is sent with or created for.
    ///
    /// ```
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    ///
    /// let config = TaskPushNotificationConfig::new("https://client.example/hook")
    ///     .with_token("t-42")
    ///     .with_authentication("Bearer", "s3cret");
    /// assert_eq!(config.authentication.unwrap().scheme, "Bearer");
    /// ```
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            tenant: String::new(),
            id: String::new(),
            task_id: TaskId::default(),
            url: url.into(),
            token: None,
            authentication: None,
        }
    }

    /// Sets [`TaskPushNotificationConfig::token`], sent back with every notification.
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Sets [`TaskPushNotificationConfig::authentication`]: the webhook gets
    /// `Authorization: {scheme} {credentials}`.
    pub fn with_authentication(
        mut self,
        scheme: impl Into<String>,
        credentials: impl Into<String>,
    ) -> Self {
        self.authentication = Some(AuthenticationInfo {
            scheme: scheme.into(),
            credentials: Some(credentials.into()),
        });
        self
    }
}

/// The answer to `ListTaskPushNotificationConfigs`.
///
/// ```
/// use a2a_protocol_types::push::ListTaskPushNotificationConfigsResponse;
///
/// let page: ListTaskPushNotificationConfigsResponse = serde_json::from_str(r#"{"configs": []}"#).unwrap();
/// assert!(page.configs.is_empty() && page.next_page_token.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// The configurations.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// Pass as `pageToken` for the next page; empty on the last page.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
}
