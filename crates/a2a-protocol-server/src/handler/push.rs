//! The four push config operations, and the config a send may carry. Each answers
//! `PushNotificationNotSupported` unless the handler delivers push notifications (the `push`
//! feature, [`RequestHandlerBuilder::with_push`](super::RequestHandlerBuilder), and a store
//! that keeps configs), as the card then says.

use a2a_protocol_types::push::{
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};
use a2a_protocol_types::{
    A2aError, DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest, TaskId,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::validate::{self, MAX_PAGE_SIZE};
use super::{CallContext, RequestHandler};
use crate::push::{PushSettings, webhook};
use crate::store::Offers;
use crate::store::PushConfigSaved;

/// Configs per page when a list asks for no size.
const DEFAULT_PAGE_SIZE: usize = 50;

impl RequestHandler {
    /// The push settings, when this handler delivers push notifications.
    pub(crate) fn push_settings(&self) -> Option<&PushSettings> {
        #[cfg(feature = "push")]
        if let Some(push) = &self.inner.services.push {
            push.ensure_started(&self.inner.store, &self.inner.services.owner);
            return Some(&push.settings);
        }
        None
    }

    /// The store's push configs; a server gives push settings only over a store that keeps
    /// them.
    fn push_store(&self) -> Result<&dyn crate::store::PushStore, A2aError> {
        self.inner
            .store
            .push()
            .ok_or_else(A2aError::push_notification_not_supported)
    }

    fn push_or_refuse(&self) -> Result<&PushSettings, A2aError> {
        self.push_settings()
            .ok_or_else(A2aError::push_notification_not_supported)
    }

    /// Checks and stores `config` for the task named in it, under `tenant`, as `ctx` may;
    /// `prefix` names its fields in errors. An empty id becomes `default_id`.
    pub(crate) async fn save_push_config(
        &self,
        tenant: &str,
        mut config: TaskPushNotificationConfig,
        default_id: impl FnOnce() -> String,
        prefix: &str,
        ctx: &CallContext,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let settings = self.push_or_refuse()?;
        self.check_tenant(tenant)?;
        validate::task_id(&format!("{prefix}taskId"), &config.task_id)?;
        if config.task_id.as_str().is_empty() {
            return Err(A2aError::invalid_params(format!(
                "{prefix}taskId: name the task the config is for"
            ))
            .with_field_violation(format!("{prefix}taskId"), "is empty"));
        }
        if config.id.is_empty() {
            config.id = default_id();
        }
        validate::identifier(&format!("{prefix}id"), &config.id)?;
        webhook::check(&config, prefix, &settings.allowed).await?;
        config.tenant = tenant.to_owned();
        self.load_stored(tenant, &config.task_id, ctx).await?;
        match self
            .push_store()?
            .save_push_config(tenant, &config, settings.max_configs_per_task)
            .await?
        {
            PushConfigSaved::Saved => Ok(config),
            PushConfigSaved::TaskMissing => Err(A2aError::task_not_found(config.task_id.as_str())),
            PushConfigSaved::AtCap => Err(A2aError::invalid_params(format!(
                "task {} already has {} push notification configs, the most it may have; \
                 delete one or replace one by its id",
                config.task_id, settings.max_configs_per_task
            ))
            .with_field_violation(format!("{prefix}id"), "one config too many for the task")),
        }
    }

    pub(crate) async fn create_push_config(
        &self,
        request: TaskPushNotificationConfig,
        ctx: &CallContext,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let tenant = request.tenant.clone();
        let saved = self
            .save_push_config(
                &tenant,
                request,
                || uuid::Uuid::new_v4().to_string(),
                "",
                ctx,
            )
            .await?;
        Ok(webhook::redacted(saved))
    }

    pub(crate) async fn get_push_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
        ctx: &CallContext,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.push_or_refuse()?;
        self.visible_task(&request.tenant, &request.task_id, ctx)
            .await?;
        validate::identifier("id", &request.id)?;
        self.push_store()?
            .get_push_config(&request.tenant, &request.task_id, &request.id)
            .await?
            .map(webhook::redacted)
            .ok_or_else(|| {
                let mut error = A2aError::task_not_found(request.task_id.as_str());
                error.message = format!(
                    "task {:?} has no push notification config {:?}",
                    request.task_id.as_str(),
                    request.id
                );
                error
            })
    }

    pub(crate) async fn list_push_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
        ctx: &CallContext,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
        self.push_or_refuse()?;
        self.visible_task(&request.tenant, &request.task_id, ctx)
            .await?;
        let page_size = match request.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n if n < 0 || n as usize > MAX_PAGE_SIZE => {
                return Err(A2aError::invalid_params(format!(
                    "pageSize: {n} is out of range; give 1 to {MAX_PAGE_SIZE}, or 0 for {DEFAULT_PAGE_SIZE}"
                ))
                .with_field_violation("pageSize", "out of range"));
            }
            n => n as usize,
        };
        let after = match request.page_token.as_str() {
            "" => None,
            token => Some(decode_page_token(token)?),
        };
        // One more than the page, to know whether another follows.
        let mut configs = self
            .push_store()?
            .list_push_configs(
                &request.tenant,
                &request.task_id,
                after.as_deref(),
                page_size + 1,
            )
            .await?;
        let next_page_token = if configs.len() > page_size {
            configs.truncate(page_size);
            configs
                .last()
                .map(|c| URL_SAFE_NO_PAD.encode(c.id.as_bytes()))
                .unwrap_or_default()
        } else {
            String::new()
        };
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: configs.into_iter().map(webhook::redacted).collect(),
            next_page_token,
        })
    }

    pub(crate) async fn delete_push_config(
        &self,
        request: DeleteTaskPushNotificationConfigRequest,
        ctx: &CallContext,
    ) -> Result<(), A2aError> {
        self.push_or_refuse()?;
        self.visible_task(&request.tenant, &request.task_id, ctx)
            .await?;
        validate::identifier("id", &request.id)?;
        // Deleting what is not there is done already: the operation is idempotent.
        self.push_store()?
            .delete_push_config(&request.tenant, &request.task_id, &request.id)
            .await?;
        Ok(())
    }

    /// Checks a config a send carries (`configuration.taskPushNotificationConfig`), before
    /// the send runs.
    pub(crate) async fn check_attached_push(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<(), A2aError> {
        let settings = self.push_or_refuse()?;
        let prefix = "configuration.taskPushNotificationConfig.";
        if !config.id.is_empty() {
            validate::identifier(&format!("{prefix}id"), &config.id)?;
        }
        webhook::check(config, prefix, &settings.allowed).await
    }

    /// Refuses a config sent with a follow-up message that would take the task past its
    /// cap (a new id on a task that has as many as it may).
    pub(crate) async fn check_push_room(
        &self,
        tenant: &str,
        config: &TaskPushNotificationConfig,
    ) -> Result<(), A2aError> {
        let Some(settings) = self.push_settings() else {
            return Ok(());
        };
        let store = self.push_store()?;
        if store
            .get_push_config(tenant, &config.task_id, &config.id)
            .await?
            .is_some()
        {
            return Ok(());
        }
        let max = settings.max_configs_per_task;
        let held = store
            .list_push_configs(tenant, &config.task_id, None, max)
            .await?;
        if held.len() >= max {
            return Err(A2aError::invalid_params(format!(
                "task {} already has {max} push notification configs, the most it may have; \
                 delete one, or send the config with the id of one to replace",
                config.task_id
            ))
            .with_field_violation(
                "configuration.taskPushNotificationConfig.id",
                "one config too many for the task",
            ));
        }
        Ok(())
    }

    /// The task's existence, as `ctx` may see it.
    async fn visible_task(
        &self,
        tenant: &str,
        task_id: &TaskId,
        ctx: &CallContext,
    ) -> Result<(), A2aError> {
        self.check_tenant(tenant)?;
        validate::task_id("taskId", task_id)?;
        self.load_stored(tenant, task_id, ctx).await.map(drop)
    }
}

fn decode_page_token(token: &str) -> Result<String, A2aError> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| {
            A2aError::invalid_params(
                "pageToken: not a token this server gave; pass nextPageToken from the \
                 previous page, or nothing for the first",
            )
            .with_field_violation("pageToken", "not a token this server gave")
        })
}
