//! The webhook POST: one attempt at one notification, connecting only to addresses a webhook
//! may reach.
//!
//! reqwest connects only to the addresses the resolver gives it, so filtering them there
//! closes the DNS-rebinding gap: a name that resolved to a public address when the config was
//! created and to `127.0.0.1` now is refused now. A URL with an address for its host is not
//! resolved, so that address is checked before the request. No proxy (it would connect
//! elsewhere) and no redirects (they would carry the credentials to another host).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use a2a_protocol_types::push::TaskPushNotificationConfig;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::address::may_reach;
use super::webhook::host_and_port;
use super::{
    AddressRange, DELIVERY_ID_HEADER, NOTIFICATION_TOKEN_HEADER, PushSettings,
    TASK_GENERATION_HEADER,
};
use crate::store::PushDelivery;

/// Why an attempt failed.
#[derive(Debug)]
pub(crate) struct Failure {
    /// Safe to record: no URL query, token or credentials.
    pub(crate) reason: String,
    /// Trying again cannot help (the webhook is on a refused address, or its config is
    /// unusable).
    pub(crate) permanent: bool,
}

impl Failure {
    fn permanent(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            permanent: true,
        }
    }

    fn transient(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            permanent: false,
        }
    }
}

/// Resolves with the system resolver, then keeps only the addresses a webhook may reach.
struct GuardedResolver {
    allowed: Arc<[AddressRange]>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allowed = Arc::clone(&self.allowed);
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let reachable: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| may_reach(a.ip(), &allowed))
                .collect();
            if reachable.is_empty() {
                return Err(format!(
                    "{host} resolves only to addresses webhooks may not reach ({})",
                    found
                        .iter()
                        .map(|a| a.ip().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
                .into());
            }
            Ok(Box::new(reachable.into_iter()) as Addrs)
        })
    }
}

/// Sends notifications.
pub(crate) struct Sender {
    client: reqwest::Client,
    allowed: Arc<[AddressRange]>,
}

impl Sender {
    pub(crate) fn new(settings: &PushSettings) -> Result<Self, reqwest::Error> {
        let allowed: Arc<[AddressRange]> = settings.allowed.clone().into();
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(GuardedResolver {
                allowed: Arc::clone(&allowed),
            }))
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(settings.request_timeout)
            .connect_timeout(settings.request_timeout)
            .user_agent(concat!("a2a-rust/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client, allowed })
    }

    /// One attempt: POST the event to the config's URL; a 2xx answer acknowledges it.
    pub(crate) async fn send(&self, delivery: &PushDelivery) -> Result<(), Failure> {
        let config = &delivery.config;
        let (host, _) = host_and_port(&config.url).map_err(Failure::permanent)?;
        if let Ok(address) = host.parse::<IpAddr>()
            && !may_reach(address, &self.allowed)
        {
            return Err(Failure::permanent(format!(
                "{address} is an address webhooks may not reach"
            )));
        }
        let body = serde_json::to_vec(&delivery.event)
            .map_err(|e| Failure::permanent(format!("the event does not serialize: {e}")))?;
        let request = self
            .client
            .post(&config.url)
            .header(http::header::CONTENT_TYPE, "application/a2a+json")
            .header(DELIVERY_ID_HEADER, delivery.delivery_id())
            .header(TASK_GENERATION_HEADER, delivery.generation.to_string());
        let request = with_credentials(request, config);
        let response = request.body(body).send().await.map_err(|e| {
            // Without the URL: its query may hold a secret.
            Failure::transient(describe(&e.without_url()))
        })?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(Failure::transient(format!(
                "the webhook answered HTTP {}",
                status.as_u16()
            )))
        }
    }
}

fn with_credentials(
    request: reqwest::RequestBuilder,
    config: &TaskPushNotificationConfig,
) -> reqwest::RequestBuilder {
    let mut request = request;
    if let Some(token) = config.token.as_deref().filter(|t| !t.is_empty()) {
        request = request.header(NOTIFICATION_TOKEN_HEADER, token);
    }
    if let Some(authentication) = &config.authentication {
        let value = match authentication.credentials.as_deref() {
            Some(credentials) => format!("{} {credentials}", authentication.scheme),
            None => authentication.scheme.clone(),
        };
        request = request.header(http::header::AUTHORIZATION, value);
    }
    request
}

/// The error and its causes, one line.
fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use a2a_protocol_types::{StreamResponse, Task, TaskState, TaskStatus};

    use super::*;

    fn delivery_to(url: &str) -> PushDelivery {
        let config: TaskPushNotificationConfig = serde_json::from_value(serde_json::json!({
            "id": "c", "taskId": "t", "url": url,
        }))
        .expect("a config");
        let event = StreamResponse::Task(Task::new("t", "c", TaskStatus::new(TaskState::Working)));
        PushDelivery::new("", config, 2, event)
    }

    #[tokio::test]
    async fn internal_addresses_are_refused_at_delivery_too() {
        // As if the config had been accepted when its name pointed elsewhere (DNS rebinding).
        let sender = Sender::new(&PushSettings::default()).expect("a client");
        let refused = sender
            .send(&delivery_to("http://localhost:9/hook"))
            .await
            .expect_err("localhost resolves to loopback");
        assert!(
            refused.reason.contains("may not reach"),
            "{}",
            refused.reason
        );
        let literal = sender
            .send(&delivery_to("http://169.254.169.254/latest"))
            .await
            .expect_err("metadata address");
        assert!(literal.permanent, "{}", literal.reason);
    }
}
