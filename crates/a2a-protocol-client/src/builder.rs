//! [`ClientBuilder`]: settings are collected freely and checked once, at [`ClientBuilder::build`].

use std::time::Duration;

use a2a_protocol_types::AgentCard;
use a2a_protocol_types::agent_card::{AGENT_CARD_PATH, PROTOCOL_VERSION};
use a2a_protocol_types::extensions::format_extensions_header;
use a2a_protocol_types::idempotency::IDEMPOTENCY_EXTENSION_URI;
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::client::A2aClient;
use crate::error::{ClientError, Phase};
use crate::retry::RetryPolicy;
use crate::transport::{
    Binding, HttpBinding, HttpTransport, RequestHook, Timeouts, Transport, VERSION,
};

/// How long one attempt of a unary call may take, unless configured otherwise.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a stream may stay silent, unless configured otherwise.
const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Builds an [`A2aClient`], for a bare endpoint or from an agent card.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_client::{Binding, ClientBuilder, RetryPolicy};
///
/// let client = ClientBuilder::new("http://127.0.0.1:8080/")
///     .with_binding(Binding::JsonRpc)
///     .with_retry_policy(RetryPolicy::default())
///     .with_request_timeout(Duration::from_secs(30))
///     .build()
///     .unwrap();
/// assert_eq!(client.url(), "http://127.0.0.1:8080", "without the trailing slash");
/// ```
#[derive(Clone)]
pub struct ClientBuilder {
    url: Option<String>,
    card: Option<AgentCard>,
    binding: Option<Binding>,
    preferred: Vec<Binding>,
    tenant: Option<String>,
    retry: Option<RetryPolicy>,
    honours_idempotency: Option<bool>,
    connect_timeout: Duration,
    request_timeout: Option<Duration>,
    stream_idle_timeout: Option<Duration>,
    headers: Vec<(String, String)>,
    hook: Option<std::sync::Arc<dyn RequestHook>>,
    credentials: crate::auth::Credentials,
    extensions: Vec<String>,
    http: Option<reqwest::Client>,
    transport: Option<std::sync::Arc<dyn Transport>>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("url", &self.url)
            .field("binding", &self.binding)
            .field("tenant", &self.tenant)
            .field("retry", &self.retry)
            .field("honours_idempotency", &self.honours_idempotency)
            .finish_non_exhaustive()
    }
}

/// The bindings a card's interfaces are chosen among, in this order, unless told otherwise:
/// JSON-RPC first (every A2A agent must offer it), gRPC last and only when built in.
#[cfg(feature = "grpc")]
const DEFAULT_PREFERENCE: &[Binding] = &[Binding::JsonRpc, Binding::HttpJson, Binding::Grpc];
#[cfg(not(feature = "grpc"))]
const DEFAULT_PREFERENCE: &[Binding] = &[Binding::JsonRpc, Binding::HttpJson];

impl ClientBuilder {
    fn empty() -> Self {
        Self {
            url: None,
            card: None,
            binding: None,
            preferred: DEFAULT_PREFERENCE.to_vec(),
            tenant: None,
            retry: None,
            honours_idempotency: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            stream_idle_timeout: Some(DEFAULT_STREAM_IDLE_TIMEOUT),
            headers: Vec::new(),
            hook: None,
            credentials: crate::auth::Credentials::default(),
            extensions: Vec::new(),
            http: None,
            transport: None,
        }
    }

    /// A client for a bare endpoint: the URL of its JSON-RPC endpoint (or, with
    /// [`ClientBuilder::with_binding`], its HTTP+JSON root). Without a card the client does not
    /// know whether the agent honours idempotency keys; assert it with
    /// [`ClientBuilder::with_peer_honouring_idempotency`].
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080/").build().unwrap();
    /// assert!(!client.honours_idempotency(), "no card, no evidence");
    /// ```
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::empty()
        }
    }

    /// A client for the agent `card` describes: an interface is chosen by the binding
    /// preference (JSON-RPC, then HTTP+JSON, unless set), its tenant is used, and the client
    /// honours-idempotency flag is set exactly when the card lists the extension.
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::agent_card::{AgentCard, AgentInterface, BINDING_HTTP_JSON};
    /// use a2a_protocol_types::idempotency::IDEMPOTENCY_EXTENSION_URI;
    /// use a2a_protocol_types::{AgentCapabilities, AgentExtension};
    ///
    /// let card = AgentCard::new("Echo", "Repeats.", "1.0.0")
    ///     .with_interface(AgentInterface::new("https://agents.example.com", BINDING_HTTP_JSON).with_tenant("acme"))
    ///     .with_capabilities(AgentCapabilities::none().with_extension(AgentExtension::new(IDEMPOTENCY_EXTENSION_URI)));
    /// let client = ClientBuilder::from_card(&card).build().unwrap();
    /// assert_eq!(client.url(), "https://agents.example.com");
    /// assert!(client.honours_idempotency(), "the card lists the extension");
    /// ```
    pub fn from_card(card: &AgentCard) -> Self {
        Self {
            card: Some(card.clone()),
            ..Self::empty()
        }
    }

    /// Fetches `{base_url}/.well-known/agent-card.json` and starts a builder from it.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("https://agents.example.com").await?.build()?;
    /// println!("{} honours keys: {}", client.url(), client.honours_idempotency());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn discover(base_url: &str) -> Result<Self, ClientError> {
        Ok(Self::from_card(&fetch_card(base_url, None).await?))
    }

    /// The binding to speak to a bare endpoint. For [`Binding::Grpc`] (with the `grpc`
    /// feature) the URL is the server's root, such as `http://127.0.0.1:8080`.
    ///
    /// ```
    /// use a2a_protocol_client::{Binding, ClientBuilder};
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080").with_binding(Binding::HttpJson).build().unwrap();
    /// # let _ = client;
    /// ```
    pub fn with_binding(mut self, binding: Binding) -> Self {
        self.binding = Some(binding);
        self
    }

    /// The order in which to choose among a card's interfaces. By default JSON-RPC, then
    /// HTTP+JSON, then (with the `grpc` feature) gRPC.
    ///
    /// ```
    /// use a2a_protocol_client::{Binding, ClientBuilder};
    /// use a2a_protocol_types::agent_card::{AgentCard, AgentInterface, BINDING_HTTP_JSON, BINDING_JSONRPC};
    ///
    /// let card = AgentCard::new("Echo", "Repeats.", "1.0.0")
    ///     .with_interface(AgentInterface::new("https://a.example/rpc", BINDING_JSONRPC))
    ///     .with_interface(AgentInterface::new("https://a.example/rest", BINDING_HTTP_JSON));
    /// let client = ClientBuilder::from_card(&card)
    ///     .with_preferred_bindings(vec![Binding::HttpJson])
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(client.url(), "https://a.example/rest");
    /// ```
    pub fn with_preferred_bindings(mut self, preferred: Vec<Binding>) -> Self {
        self.preferred = preferred;
        self
    }

    /// The tenant to put in every request (overrides the card's).
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080").with_tenant("acme").build().unwrap();
    /// # let _ = client;
    /// ```
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }

    /// Retries failed calls as the policy says. Without one, nothing is ever re-sent.
    ///
    /// ```
    /// use a2a_protocol_client::{ClientBuilder, RetryPolicy};
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080")
    ///     .with_retry_policy(RetryPolicy::default().with_max_attempts(5))
    ///     .build()
    ///     .unwrap();
    /// # let _ = client;
    /// ```
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Asserts (or denies) that the agent honours idempotency keys, which makes keyed sends
    /// retryable after an ambiguous failure. Overrides what the card says.
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080")
    ///     .with_peer_honouring_idempotency(true)
    ///     .build()
    ///     .unwrap();
    /// assert!(client.honours_idempotency());
    /// ```
    pub fn with_peer_honouring_idempotency(mut self, honours: bool) -> Self {
        self.honours_idempotency = Some(honours);
        self
    }

    /// How long connecting may take. Default 10 s.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080")
    ///     .with_connect_timeout(Duration::from_secs(2))
    ///     .build()
    ///     .unwrap();
    /// # let _ = client;
    /// ```
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one attempt of a unary call may take in all. Default 5 minutes: a blocking
    /// send of longer work needs more (or `returnImmediately` and a subscription), and
    /// [`ClientBuilder::with_no_request_timeout`] waits as long as the agent takes. A call
    /// that times out after it was sent is an ambiguous failure, retried only where that
    /// cannot run anything twice (a keyed send to an agent that honours keys, a read).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080")
    ///     .with_request_timeout(Duration::from_secs(120))
    ///     .build()
    ///     .unwrap();
    /// # let _ = client;
    /// ```
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// Lets unary calls take as long as the agent takes.
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080").with_no_request_timeout().build();
    /// assert!(client.is_ok());
    /// ```
    pub fn with_no_request_timeout(mut self) -> Self {
        self.request_timeout = None;
        self
    }

    /// How long a stream may stay silent (keep-alives count) before it is treated as cut.
    /// Default 5 minutes.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// // The server's keep-alives arrive every 15 s; a minute of silence means the stream is gone.
    /// let client = ClientBuilder::new("http://127.0.0.1:8080")
    ///     .with_stream_idle_timeout(Duration::from_secs(60))
    ///     .build()
    ///     .unwrap();
    /// # let _ = client;
    /// ```
    pub fn with_stream_idle_timeout(mut self, timeout: Duration) -> Self {
        self.stream_idle_timeout = Some(timeout);
        self
    }

    /// Sends `credentials` as the agent's card asks (see [`crate::auth`]): the first of the
    /// card's security requirements they meet decides which go where. Without a card, only a
    /// bearer token can be placed (in `Authorization`).
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_client::auth::Credentials;
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080")
    ///     .with_credentials(Credentials::new().with_bearer_token("t-1"))
    ///     .build();
    /// assert!(client.is_ok());
    /// ```
    pub fn with_credentials(mut self, credentials: crate::auth::Credentials) -> Self {
        self.credentials = credentials;
        self
    }

    /// Adds a header to every request.
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080").with_header("x-team", "search").build();
    /// assert!(client.is_ok());
    /// let bad = ClientBuilder::new("http://127.0.0.1:8080").with_header("bad header", "x").build();
    /// assert!(bad.is_err(), "checked at build()");
    /// ```
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Runs `hook` before every attempt of every request: it may add or change headers (say,
    /// a signature), wait for something first, or refuse (see [`RequestHook`]). Credentials
    /// the card asks for are better sent with [`ClientBuilder::with_credentials`].
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080")
    ///     .with_request_hook(|headers: &mut http::HeaderMap| {
    ///         headers.insert(http::header::AUTHORIZATION, http::HeaderValue::from_static("Bearer t0k3n"));
    ///     })
    ///     .build()
    ///     .unwrap();
    /// # let _ = client;
    /// ```
    pub fn with_request_hook(mut self, hook: impl RequestHook) -> Self {
        self.hook = Some(std::sync::Arc::new(hook));
        self
    }

    /// Extensions to activate on every request (`A2A-Extensions`).
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::lease::LEASE_EXTENSION_URI;
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080")
    ///     .with_extensions(vec![LEASE_EXTENSION_URI.to_owned()])
    ///     .build()
    ///     .unwrap();
    /// # let _ = client;
    /// ```
    pub fn with_extensions(mut self, uris: Vec<String>) -> Self {
        self.extensions = uris;
        self
    }

    /// Uses this HTTP client (its own timeouts and TLS settings apply).
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// let http = reqwest::Client::builder().pool_max_idle_per_host(4).build().unwrap();
    /// let client = ClientBuilder::new("http://127.0.0.1:8080").with_http_client(http).build().unwrap();
    /// # let _ = client;
    /// ```
    pub fn with_http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    /// Reaches the agent through `transport` instead of the built-in HTTP bindings. The client
    /// still makes the headers of each attempt (version, extensions, [`Self::with_header`],
    /// the request hook, the trace context), fills in the tenant, retries and resumes streams;
    /// the HTTP settings (timeouts, credentials placed by the card, the HTTP client) are the
    /// built-in transports' and do not apply. The URL given to [`ClientBuilder::new`] is not
    /// used; a card still tells whether the agent honours keys.
    ///
    /// ```
    /// use a2a_protocol_client::{Answer, ClientBuilder, ClientError, EventStream, Transport, TransportRequest};
    ///
    /// struct Offline;
    ///
    /// #[async_trait::async_trait]
    /// impl Transport for Offline {
    ///     fn binding(&self) -> &str {
    ///         "OFFLINE"
    ///     }
    ///     fn url(&self) -> &str {
    ///         "offline:"
    ///     }
    ///     async fn unary(&self, _: TransportRequest<'_>) -> Result<Answer, ClientError> {
    ///         Err(ClientError::Config("offline".into()))
    ///     }
    ///     async fn open_stream(&self, _: TransportRequest<'_>) -> Result<EventStream, ClientError> {
    ///         Err(ClientError::Config("offline".into()))
    ///     }
    /// }
    ///
    /// let client = ClientBuilder::new("offline:").with_transport(Offline).build().unwrap();
    /// assert_eq!(client.url(), "offline:");
    /// ```
    pub fn with_transport(mut self, transport: impl Transport) -> Self {
        self.transport = Some(std::sync::Arc::new(transport));
        self
    }

    /// Checks the settings and builds the client.
    ///
    /// ```
    /// use a2a_protocol_client::{ClientBuilder, ClientError};
    ///
    /// let error = ClientBuilder::new("ftp://agents.example.com").build().unwrap_err();
    /// assert!(matches!(error, ClientError::Config(_)), "{error}");
    /// ```
    pub fn build(self) -> Result<A2aClient, ClientError> {
        let headers = self.headers()?;
        let honours = self.honours_idempotency.unwrap_or_else(|| {
            self.card
                .as_ref()
                .is_some_and(|card| card.supports_extension(IDEMPOTENCY_EXTENSION_URI))
        });
        if let Some(transport) = self.transport {
            return Ok(A2aClient::new(
                transport,
                headers,
                self.hook,
                self.tenant.unwrap_or_default(),
                self.retry,
                honours,
                self.card,
            ));
        }
        let (url, binding, card_tenant) = match (&self.card, &self.url) {
            (Some(card), _) => choose_interface(card, &self.preferred)?,
            (None, Some(url)) => (
                url.clone(),
                self.binding.unwrap_or(Binding::JsonRpc),
                String::new(),
            ),
            (None, None) => return Err(ClientError::Config("no URL and no card".into())),
        };
        let url = if binding == Binding::Grpc {
            grpc_url(&url)
        } else {
            url
        };
        let parsed = reqwest::Url::parse(&url)
            .map_err(|e| ClientError::Config(format!("the agent URL {url:?} is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ClientError::Config(format!(
                "the agent URL {url:?} must be http or https"
            )));
        }
        let tenant = self.tenant.unwrap_or(card_tenant);
        let credentials = self.credentials.place(self.card.as_ref())?;
        let timeouts = Timeouts {
            request: self.request_timeout,
            stream_idle: self.stream_idle_timeout,
        };
        let transport: std::sync::Arc<dyn Transport> = match HttpBinding::of(binding) {
            Some(binding) => {
                let http = match self.http {
                    Some(http) => http,
                    None => http_client(self.connect_timeout)?,
                };
                std::sync::Arc::new(HttpTransport::new(
                    binding,
                    url,
                    http,
                    credentials,
                    timeouts,
                ))
            }
            None => grpc_transport(url, credentials, timeouts, self.connect_timeout)?,
        };
        Ok(A2aClient::new(
            transport, headers, self.hook, tenant, self.retry, honours, self.card,
        ))
    }

    /// The headers every attempt starts from: the version, the activated extensions and the
    /// builder's own.
    fn headers(&self) -> Result<HeaderMap, ClientError> {
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("a2a-version"), VERSION);
        if !self.extensions.is_empty() {
            let value = HeaderValue::from_str(&format_extensions_header(&self.extensions))
                .map_err(|_| {
                    ClientError::Config("an extension URI is not a valid header value".into())
                })?;
            headers.insert(HeaderName::from_static("a2a-extensions"), value);
        }
        for (name, value) in &self.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ClientError::Config(format!("{name:?} is not a valid header name")))?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                ClientError::Config(format!("the value of header {name} is not valid"))
            })?;
            headers.append(name, value);
        }
        Ok(headers)
    }
}

/// A card's gRPC address as a URL. The spec asks for an absolute URL, but cards in the wild
/// (the official SDKs' samples among them) also give a bare gRPC target, `host:port`, which
/// gRPC clients reach in plaintext; it is read the same way here.
fn grpc_url(url: &str) -> String {
    if url.contains("://") {
        url.to_owned()
    } else {
        format!("http://{url}")
    }
}

/// The client's own HTTP client. No overall timeout: it would cut long streams; unary calls
/// get theirs one by one.
fn http_client(connect_timeout: Duration) -> Result<reqwest::Client, ClientError> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        .redirect(crate::auth::same_origin_redirects())
        .build()
        .map_err(|e| ClientError::Config(format!("the HTTP client could not be built: {e}")))
}

#[cfg(feature = "grpc")]
fn grpc_transport(
    url: String,
    credentials: Option<crate::auth::Placed>,
    timeouts: Timeouts,
    connect_timeout: Duration,
) -> Result<std::sync::Arc<dyn Transport>, ClientError> {
    let transport =
        crate::transport::GrpcTransport::new(url, credentials, timeouts, connect_timeout)?;
    Ok(std::sync::Arc::new(transport))
}

#[cfg(not(feature = "grpc"))]
fn grpc_transport(
    url: String,
    _: Option<crate::auth::Placed>,
    _: Timeouts,
    _: Duration,
) -> Result<std::sync::Arc<dyn Transport>, ClientError> {
    Err(ClientError::Config(format!(
        "the agent at {url} is to be reached over gRPC, which needs the `grpc` feature of \
         a2a-protocol-client"
    )))
}

/// The interface to use: the first preferred binding the card offers, version 1.0 first.
fn choose_interface(
    card: &AgentCard,
    preferred: &[Binding],
) -> Result<(String, Binding, String), ClientError> {
    for binding in preferred {
        let candidates = card
            .supported_interfaces
            .iter()
            .filter(|i| i.protocol_binding.eq_ignore_ascii_case(binding.name()));
        let best = candidates
            .clone()
            .find(|i| {
                i.protocol_version
                    .split('.')
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(".")
                    == PROTOCOL_VERSION
            })
            .or_else(|| candidates.clone().find(|i| i.protocol_version.is_empty()));
        if let Some(interface) = best {
            return Ok((interface.url.clone(), *binding, interface.tenant.clone()));
        }
    }
    Err(ClientError::Config(format!(
        "the card of {:?} offers no A2A {PROTOCOL_VERSION} interface over {}",
        card.name,
        preferred
            .iter()
            .map(|b| b.name())
            .collect::<Vec<_>>()
            .join(" or ")
    )))
}

/// Fetches an agent card from `{base_url}/.well-known/agent-card.json`.
///
/// ```no_run
/// use a2a_protocol_client::fetch_card;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
/// let card = fetch_card("https://agents.example.com", None).await?;
/// println!("{}: {}", card.name, card.description);
/// # Ok(())
/// # }
/// ```
pub async fn fetch_card(
    base_url: &str,
    http: Option<&reqwest::Client>,
) -> Result<AgentCard, ClientError> {
    let url = format!("{}{AGENT_CARD_PATH}", base_url.trim_end_matches('/'));
    let owned;
    let http = match http {
        Some(http) => http,
        None => {
            // A card is small: an agent that has not sent it in this long is not answering.
            owned = reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .timeout(Duration::from_secs(30))
                .build()
                .map_err(|e| {
                    ClientError::Config(format!("the HTTP client could not be built: {e}"))
                })?;
            &owned
        }
    };
    let response = http
        .get(&url)
        .header("A2A-Version", PROTOCOL_VERSION)
        .send()
        .await
        .map_err(|e| ClientError::from_reqwest(e, Phase::Request))?;
    let status = response.status().as_u16();
    let body = response
        .bytes()
        .await
        .map_err(|e| ClientError::from_reqwest(e, Phase::Request))?;
    if !(200..300).contains(&status) {
        return Err(ClientError::Http {
            status,
            body: crate::transport::truncate(&body),
            retry_after: None,
        });
    }
    serde_json::from_slice(&body)
        .map_err(|e| ClientError::Decode(format!("agent card at {url}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::grpc_url;

    #[test]
    fn a_bare_grpc_target_is_reached_in_plaintext_and_a_url_as_it_is() {
        assert_eq!(grpc_url("127.0.0.1:50051"), "http://127.0.0.1:50051");
        assert_eq!(grpc_url("https://a.example/a2a"), "https://a.example/a2a");
        assert_eq!(grpc_url("http://a.example:8080"), "http://a.example:8080");
    }
}
