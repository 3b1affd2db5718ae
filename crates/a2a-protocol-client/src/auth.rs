//! Credentials for agents that require authentication, sent where the agent's card says.
//!
//! Give the client what you hold ([`Credentials`]): an API key, a bearer token, or a
//! [`TokenSource`] that fetches and refreshes one. When the client is built from the agent's
//! card, it picks the first of the card's `securityRequirements` those credentials meet and
//! sends each credential as its scheme declares (an API key's header, query parameter or
//! cookie; `Authorization` for HTTP, OAuth 2.0 and OpenID Connect). An agent whose card asks
//! for nothing gets nothing, and a redirect to another origin is not followed, so a credential
//! reaches no host but the agent's.
//!
//! ```no_run
//! use a2a_protocol_client::ClientBuilder;
//! use a2a_protocol_client::auth::Credentials;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let key = std::env::var("AGENT_API_KEY")?;
//! let client = ClientBuilder::discover("https://agents.example.com")
//!     .await?
//!     .with_credentials(Credentials::new().with_api_key(key))
//!     .build()?;
//! # let _ = client;
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use a2a_protocol_types::AgentCard;
use a2a_protocol_types::security::SecurityScheme;
use async_trait::async_trait;
#[cfg(feature = "grpc")]
use http::HeaderMap;
use http::{HeaderName, HeaderValue};

use crate::error::ClientError;

/// Supplies a token each time a request is sent: an OAuth 2.0 client that caches its access
/// token and fetches a new one before it expires, say.
///
/// ```
/// use a2a_protocol_client::auth::TokenSource;
///
/// struct FromVault;
///
/// #[async_trait::async_trait]
/// impl TokenSource for FromVault {
///     async fn token(&self) -> Result<String, String> {
///         // A real source caches the token and refreshes it ahead of its expiry.
///         Ok("t-from-vault".into())
///     }
/// }
/// ```
#[async_trait]
pub trait TokenSource: Send + Sync + 'static {
    /// The token to send now, or why there is none (the request is then not sent).
    async fn token(&self) -> Result<String, String>;
}

#[derive(Clone)]
enum Secret {
    Fixed(Arc<str>),
    Source(Arc<dyn TokenSource>),
}

impl Secret {
    async fn value(&self) -> Result<String, ClientError> {
        match self {
            Secret::Fixed(value) => Ok(value.to_string()),
            Secret::Source(source) => source.token().await.map_err(|why| {
                ClientError::Credentials(format!("the token source gave no token: {why}"))
            }),
        }
    }
}

/// What the caller holds, by kind of scheme or by the card's scheme name.
///
/// ```
/// use a2a_protocol_client::auth::Credentials;
///
/// let credentials = Credentials::new()
///     .with_api_key("k-7c1f2b9e4d")
///     .with_scheme_credential("partnerBasic", "cGFydG5lcjpzM2NyZXQ=");
/// assert!(!credentials.is_empty());
/// // Never printed:
/// assert!(!format!("{credentials:?}").contains("k-7c1f2b9e4d"));
/// ```
#[derive(Clone, Default)]
pub struct Credentials {
    api_key: Option<Secret>,
    bearer: Option<Secret>,
    by_scheme: HashMap<String, Secret>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut schemes: Vec<&str> = self.by_scheme.keys().map(String::as_str).collect();
        schemes.sort_unstable();
        f.debug_struct("Credentials")
            .field("api_key", &self.api_key.is_some())
            .field("bearer", &self.bearer.is_some())
            .field("schemes", &schemes)
            .finish()
    }
}

impl Credentials {
    /// None yet.
    ///
    /// ```
    /// use a2a_protocol_client::auth::Credentials;
    ///
    /// assert!(Credentials::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// An API key, for the card's API key schemes.
    ///
    /// ```
    /// use a2a_protocol_client::auth::Credentials;
    ///
    /// assert!(!Credentials::new().with_api_key("k-1").is_empty());
    /// ```
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::Fixed(Arc::from(key.into())));
        self
    }

    /// A bearer token, for the card's HTTP bearer, OAuth 2.0 and OpenID Connect schemes.
    ///
    /// ```
    /// use a2a_protocol_client::auth::Credentials;
    ///
    /// assert!(!Credentials::new().with_bearer_token("t-1").is_empty());
    /// ```
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(Secret::Fixed(Arc::from(token.into())));
        self
    }

    /// Bearer tokens from `source`, asked before every request, for the same schemes as
    /// [`Credentials::with_bearer_token`].
    ///
    /// ```
    /// use a2a_protocol_client::auth::{Credentials, TokenSource};
    ///
    /// struct Fixed;
    /// #[async_trait::async_trait]
    /// impl TokenSource for Fixed {
    ///     async fn token(&self) -> Result<String, String> { Ok("t-1".into()) }
    /// }
    /// assert!(!Credentials::new().with_token_source(Fixed).is_empty());
    /// ```
    pub fn with_token_source(mut self, source: impl TokenSource) -> Self {
        self.bearer = Some(Secret::Source(Arc::new(source)));
        self
    }

    /// The credential for the card's scheme named `scheme` (a key of its `securitySchemes`),
    /// sent as that scheme says: the key itself, or what follows the scheme's name in
    /// `Authorization` (for `Basic`, the base64 of `user:password`). It wins over the
    /// credentials given by kind.
    ///
    /// ```
    /// use a2a_protocol_client::auth::Credentials;
    ///
    /// assert!(!Credentials::new().with_scheme_credential("internalKey", "k-9").is_empty());
    /// ```
    pub fn with_scheme_credential(
        mut self,
        scheme: impl Into<String>,
        credential: impl Into<String>,
    ) -> Self {
        self.by_scheme
            .insert(scheme.into(), Secret::Fixed(Arc::from(credential.into())));
        self
    }

    /// Whether no credential is held.
    ///
    /// ```
    /// use a2a_protocol_client::auth::Credentials;
    ///
    /// assert!(Credentials::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.api_key.is_none() && self.bearer.is_none() && self.by_scheme.is_empty()
    }

    /// The secret these credentials hold for the card's scheme `name`.
    fn for_scheme(&self, name: &str, scheme: &SecurityScheme) -> Option<Secret> {
        if let Some(secret) = self.by_scheme.get(name) {
            return Some(secret.clone());
        }
        match scheme {
            SecurityScheme::ApiKey(_) => self.api_key.clone(),
            SecurityScheme::HttpAuth(http) if http.scheme.eq_ignore_ascii_case("bearer") => {
                self.bearer.clone()
            }
            SecurityScheme::OAuth2(_) | SecurityScheme::OpenIdConnect(_) => self.bearer.clone(),
            _ => None,
        }
    }

    /// Where each credential goes for an agent with `card` (or, without a card, a bearer token
    /// in `Authorization`): `None` when nothing is to be sent.
    pub(crate) fn place(&self, card: Option<&AgentCard>) -> Result<Option<Placed>, ClientError> {
        if self.is_empty() {
            return Ok(None);
        }
        let Some(card) = card else {
            if self.api_key.is_some() || !self.by_scheme.is_empty() {
                return Err(ClientError::Config(
                    "where an API key or a scheme's credential goes is read from the agent's \
                     card; build the client from the card (ClientBuilder::discover or \
                     from_card), or send it yourself with with_header"
                        .into(),
                ));
            }
            return Ok(self.bearer.clone().map(|secret| Placed {
                parts: vec![(Place::Authorization("Bearer".into()), secret)],
            }));
        };
        if card.security_requirements.is_empty() {
            return Ok(None);
        }
        let mut anonymous = false;
        for requirement in &card.security_requirements {
            if requirement.schemes.is_empty() {
                anonymous = true;
                continue;
            }
            // Mutual TLS needs nothing in the request: the certificate is the HTTP client's
            // (ClientBuilder::with_http_client with a reqwest identity).
            let parts: Option<Vec<Option<(Place, Secret)>>> = requirement
                .schemes
                .keys()
                .map(|name| {
                    let scheme = card.security_schemes.get(name)?;
                    if let SecurityScheme::MutualTls(_) = scheme {
                        return Some(None);
                    }
                    Some(Some((place_of(scheme)?, self.for_scheme(name, scheme)?)))
                })
                .collect();
            if let Some(parts) = parts {
                let parts: Vec<(Place, Secret)> = parts.into_iter().flatten().collect();
                return Ok((!parts.is_empty()).then_some(Placed { parts }));
            }
        }
        if anonymous {
            return Ok(None);
        }
        let wanted = card
            .security_requirements
            .iter()
            .map(|r| r.schemes.keys().cloned().collect::<Vec<_>>().join(" and "))
            .collect::<Vec<_>>()
            .join(" or ");
        Err(ClientError::Config(format!(
            "the agent {:?} requires {wanted} and the credentials given meet none of them; \
             give the matching credential (with_api_key, with_bearer_token, \
             with_scheme_credential)",
            card.name
        )))
    }
}

/// Where a credential goes in a request.
#[derive(Debug, Clone)]
enum Place {
    Header(HeaderName),
    Query(String),
    Cookie(String),
    /// `Authorization: {scheme} {credential}`.
    Authorization(String),
}

fn place_of(scheme: &SecurityScheme) -> Option<Place> {
    match scheme {
        SecurityScheme::ApiKey(key) => match key.location.as_str() {
            "header" => HeaderName::from_bytes(key.name.as_bytes())
                .ok()
                .map(Place::Header),
            "query" => Some(Place::Query(key.name.clone())),
            "cookie" => Some(Place::Cookie(key.name.clone())),
            _ => None,
        },
        SecurityScheme::HttpAuth(http) => Some(Place::Authorization(http.scheme.clone())),
        SecurityScheme::OAuth2(_) | SecurityScheme::OpenIdConnect(_) => {
            Some(Place::Authorization("Bearer".into()))
        }
        SecurityScheme::MutualTls(_) => None,
    }
}

/// The credentials of one agent, each with its place.
#[derive(Clone)]
pub(crate) struct Placed {
    parts: Vec<(Place, Secret)>,
}

impl Placed {
    /// `request` with every credential in its place.
    pub(crate) async fn apply(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::RequestBuilder, ClientError> {
        let resolved = self.resolve().await?;
        let mut request = request;
        if !resolved.query.is_empty() {
            request = request.query(&resolved.query);
        }
        for (name, value) in resolved.headers {
            request = request.header(name, value);
        }
        Ok(request)
    }

    /// Every credential in its place, for a binding that has only headers (gRPC metadata): a
    /// credential the card puts in the query cannot go, and the request is not sent.
    #[cfg(feature = "grpc")]
    pub(crate) async fn apply_to_headers(
        &self,
        headers: &mut HeaderMap,
    ) -> Result<(), ClientError> {
        let resolved = self.resolve().await?;
        if let Some((name, _)) = resolved.query.first() {
            return Err(ClientError::Credentials(format!(
                "the card puts the API key in the query parameter {name:?}, which gRPC has no \
                 place for; use an HTTP binding for this agent"
            )));
        }
        for (name, value) in resolved.headers {
            headers.append(name, value);
        }
        Ok(())
    }

    /// The credentials' current values (a token source is asked now), as headers and query
    /// parameters.
    async fn resolve(&self) -> Result<Resolved, ClientError> {
        let mut resolved = Resolved::default();
        for (place, secret) in &self.parts {
            let value = secret.value().await?;
            let header = |text: String| {
                let mut value = HeaderValue::from_str(&text).map_err(|_| {
                    ClientError::Credentials(
                        "a credential holds characters a header cannot carry".into(),
                    )
                })?;
                value.set_sensitive(true);
                Ok::<_, ClientError>(value)
            };
            match place {
                Place::Header(name) => resolved.headers.push((name.clone(), header(value)?)),
                Place::Query(name) => resolved.query.push((name.clone(), value)),
                Place::Cookie(name) => resolved
                    .headers
                    .push((http::header::COOKIE, header(format!("{name}={value}"))?)),
                Place::Authorization(scheme) => resolved.headers.push((
                    http::header::AUTHORIZATION,
                    header(format!("{scheme} {value}"))?,
                )),
            }
        }
        Ok(resolved)
    }
}

/// Credentials with their values, where they go.
#[derive(Default)]
struct Resolved {
    headers: Vec<(HeaderName, HeaderValue)>,
    query: Vec<(String, String)>,
}

/// Follows a redirect only within the origin the request went to, so no credential (an API
/// key in a custom header included, which HTTP clients do not strip) reaches another host.
/// The client's own HTTP client uses it; give it to one you pass with
/// [`crate::ClientBuilder::with_http_client`] (for a client certificate, say).
///
/// ```
/// use a2a_protocol_client::auth::same_origin_redirects;
///
/// let http = reqwest::Client::builder().redirect(same_origin_redirects()).build();
/// assert!(http.is_ok());
/// ```
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 5 {
            attempt.error("more than 5 redirects")
        } else {
            attempt.follow()
        }
    })
}
