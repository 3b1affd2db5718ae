//! Authentication that follows the agent card.
//!
//! The card declares how callers authenticate (`securitySchemes`) and which schemes a request
//! needs (`securityRequirements`: any one requirement, each of whose schemes must pass). An
//! [`Authenticator`] holds one [`CredentialVerifier`] per scheme name; the server reads each
//! request's credential where the card says it travels (an API key's header, query parameter
//! or cookie; `Authorization` for HTTP, OAuth 2.0 and OpenID Connect schemes), asks the
//! verifier, and hands the [`CallerIdentity`] it answers to the handler, which scopes tasks and
//! idempotency keys by it. A request that fails answers 401 with `WWW-Authenticate`, one whose
//! credential lacks a scope answers 403, and neither body is read.
//!
//! ```
//! use a2a_protocol_server::agents::EchoAgent;
//! use a2a_protocol_server::auth::{Authenticator, StaticCredentials};
//! use a2a_protocol_server::types::security::{ApiKeySecurityScheme, SecurityRequirement, SecurityScheme};
//! use a2a_protocol_server::{A2aServer, RequestHandler, ServerConfig};
//!
//! let mut card = EchoAgent::card();
//! card.security_schemes.insert(
//!     "apiKey".into(),
//!     SecurityScheme::ApiKey(ApiKeySecurityScheme {
//!         description: None,
//!         location: "header".into(),
//!         name: "X-API-Key".into(),
//!     }),
//! );
//! card.security_requirements.push(SecurityRequirement {
//!     schemes: [("apiKey".to_owned(), Default::default())].into(),
//! });
//! let keys = StaticCredentials::new()
//!     .with_credential("alice-secret-key", "alice")
//!     .with_credential("bob-secret-key", "bob");
//! let handler = RequestHandler::builder(EchoAgent::new()).with_agent_card(card).build();
//! let server = A2aServer::new(handler).with_config(
//!     ServerConfig::default().with_authentication(Authenticator::new().with_verifier("apiKey", keys)),
//! );
//! # let _ = server;
//! ```
//!
//! A user's own authentication layer works as well: a tower layer in front of the router that
//! puts a [`CallerIdentity`] in the request's extensions is trusted as is, and the card's
//! schemes are then not checked again for that request.

mod credentials;
#[cfg(feature = "jwt")]
mod jwt;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use a2a_protocol_types::AgentCard;
use async_trait::async_trait;

pub use crate::executor::CallerIdentity;
#[cfg(feature = "jwt")]
pub use jsonwebtoken::{Algorithm, DecodingKey, Validation};
#[cfg(feature = "jwt")]
pub use jwt::JwtVerifier;

use credentials::{Presented, challenge, presented};

/// Why a credential was not accepted.
///
/// ```
/// use a2a_protocol_server::auth::AuthFailure;
///
/// let failure = AuthFailure::Invalid("the token expired; fetch a new one".into());
/// assert_eq!(failure.to_string(), "the token expired; fetch a new one");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthFailure {
    /// Not a credential this scheme accepts (unknown, expired, badly signed): 401.
    Invalid(String),
    /// A valid credential without a scope the request needs: 403.
    Insufficient(String),
    /// The credential cannot be checked now (say, the key set is unreachable): 503, retry.
    Unavailable(String),
}

impl fmt::Display for AuthFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid(why) | Self::Insufficient(why) | Self::Unavailable(why) => {
                f.write_str(why)
            }
        }
    }
}

impl std::error::Error for AuthFailure {}

/// Checks the credential a request presents for one security scheme and names the caller.
///
/// `scopes` are the scopes the card's requirement lists for the scheme (OAuth 2.0 scopes, or
/// roles for other schemes); a verifier that knows the credential but finds a scope missing
/// answers [`AuthFailure::Insufficient`].
///
/// ```
/// use a2a_protocol_server::auth::{AuthFailure, CallerIdentity, CredentialVerifier};
///
/// /// Accepts tokens an internal service issued, by asking it.
/// struct AskTheIssuer;
///
/// #[async_trait::async_trait]
/// impl CredentialVerifier for AskTheIssuer {
///     async fn verify(&self, token: &str, _scopes: &[String]) -> Result<CallerIdentity, AuthFailure> {
///         match token.strip_prefix("svc-") {
///             Some(service) => Ok(CallerIdentity(service.to_owned())),
///             None => Err(AuthFailure::Invalid("not a service token".into())),
///         }
///     }
/// }
/// ```
#[async_trait]
pub trait CredentialVerifier: Send + Sync + 'static {
    /// The caller `credential` proves, or why it proves none. Never log the credential.
    async fn verify(
        &self,
        credential: &str,
        scopes: &[String],
    ) -> Result<CallerIdentity, AuthFailure>;
}

/// A fixed set of secrets (API keys, or bearer tokens issued out of band), each naming its
/// caller. A known secret satisfies any scopes.
///
/// ```
/// use a2a_protocol_server::auth::{CallerIdentity, CredentialVerifier, StaticCredentials};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let keys = StaticCredentials::new().with_credential("k-7c1f2b9e4d", "reporting-job");
/// assert_eq!(keys.verify("k-7c1f2b9e4d", &[]).await, Ok(CallerIdentity("reporting-job".into())));
/// assert!(keys.verify("k-guess", &[]).await.is_err());
/// # }
/// ```
#[derive(Clone, Default)]
pub struct StaticCredentials {
    /// Looked up by the whole secret through std's seeded SipHash, so how long a lookup takes
    /// tells a guesser nothing about how much of a secret it got right.
    callers: HashMap<String, CallerIdentity>,
}

impl fmt::Debug for StaticCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticCredentials")
            .field("credentials", &self.callers.len())
            .finish()
    }
}

impl StaticCredentials {
    /// No credentials yet.
    ///
    /// ```
    /// use a2a_protocol_server::auth::StaticCredentials;
    ///
    /// assert!(StaticCredentials::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `secret` as `caller`.
    ///
    /// ```
    /// use a2a_protocol_server::auth::StaticCredentials;
    ///
    /// let keys = StaticCredentials::new().with_credential("k-1b7d0e", "alice");
    /// assert!(!keys.is_empty());
    /// ```
    pub fn with_credential(mut self, secret: impl Into<String>, caller: impl Into<String>) -> Self {
        self.callers
            .insert(secret.into(), CallerIdentity(caller.into()));
        self
    }

    /// Whether no credential is accepted.
    ///
    /// ```
    /// use a2a_protocol_server::auth::StaticCredentials;
    ///
    /// assert!(StaticCredentials::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.callers.is_empty()
    }
}

#[async_trait]
impl CredentialVerifier for StaticCredentials {
    async fn verify(
        &self,
        credential: &str,
        _scopes: &[String],
    ) -> Result<CallerIdentity, AuthFailure> {
        self.callers.get(credential).cloned().ok_or_else(|| {
            AuthFailure::Invalid("the credential is not one this agent issued".into())
        })
    }
}

/// Accepts every client certificate the server's TLS verified, naming the caller by its
/// common name (or, without one, its subject): the verifier for a card's
/// `mtlsSecurityScheme` when the client CA alone decides who may call. For a narrower set,
/// use [`StaticCredentials`] keyed by common name.
///
/// ```
/// use a2a_protocol_server::auth::{CallerIdentity, ClientCertificates, CredentialVerifier};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let caller = ClientCertificates.verify("billing-service", &[]).await;
/// assert_eq!(caller, Ok(CallerIdentity("billing-service".into())));
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientCertificates;

#[async_trait]
impl CredentialVerifier for ClientCertificates {
    async fn verify(
        &self,
        credential: &str,
        _scopes: &[String],
    ) -> Result<CallerIdentity, AuthFailure> {
        Ok(CallerIdentity(credential.to_owned()))
    }
}

/// The verifiers of the card's security schemes, by scheme name.
///
/// ```
/// use a2a_protocol_server::auth::{Authenticator, StaticCredentials};
///
/// let auth = Authenticator::new().with_verifier("apiKey", StaticCredentials::new().with_credential("k-1", "alice"));
/// assert!(auth.verifies("apiKey"));
/// ```
#[derive(Clone, Default)]
pub struct Authenticator {
    verifiers: HashMap<String, Arc<dyn CredentialVerifier>>,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut schemes: Vec<&str> = self.verifiers.keys().map(String::as_str).collect();
        schemes.sort_unstable();
        f.debug_struct("Authenticator")
            .field("schemes", &schemes)
            .finish()
    }
}

/// How a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No requirement was met: 401, with a challenge per scheme.
    Unauthenticated {
        message: String,
        challenges: Vec<String>,
    },
    /// A credential was valid but lacked a scope: 403.
    Forbidden {
        message: String,
        challenges: Vec<String>,
    },
    /// A credential could not be checked now: 503.
    Unavailable(String),
}

impl Authenticator {
    /// No verifiers yet.
    ///
    /// ```
    /// use a2a_protocol_server::auth::Authenticator;
    ///
    /// assert!(!Authenticator::new().verifies("apiKey"));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Verifies the credentials of the card's scheme `scheme` (a key of its
    /// `securitySchemes`) with `verifier`.
    ///
    /// ```
    /// use a2a_protocol_server::auth::{Authenticator, StaticCredentials};
    ///
    /// let auth = Authenticator::new().with_verifier("bearer", StaticCredentials::new().with_credential("t-1", "ci"));
    /// assert!(auth.verifies("bearer"));
    /// ```
    pub fn with_verifier(
        mut self,
        scheme: impl Into<String>,
        verifier: impl CredentialVerifier,
    ) -> Self {
        self.verifiers.insert(scheme.into(), Arc::new(verifier));
        self
    }

    /// Whether a verifier is set for the scheme named `scheme`.
    ///
    /// ```
    /// use a2a_protocol_server::auth::Authenticator;
    ///
    /// assert!(!Authenticator::new().verifies("oauth"));
    /// ```
    pub fn verifies(&self, scheme: &str) -> bool {
        self.verifiers.contains_key(scheme)
    }

    /// Checks that `card` and these verifiers fit: the card requires authentication, and every
    /// scheme a requirement names is declared, can be read from a request, and has a verifier.
    /// (Mutual TLS is refused here: it also needs the server to verify client certificates,
    /// which [`crate::A2aServer::serve`] checks with its configuration.)
    ///
    /// ```
    /// use a2a_protocol_server::auth::Authenticator;
    /// use a2a_protocol_server::types::AgentCard;
    ///
    /// let card = AgentCard::new("A", "B", "1.0");
    /// let error = Authenticator::new().check(&card).unwrap_err();
    /// assert!(error.contains("securityRequirements"), "{error}");
    /// ```
    pub fn check(&self, card: &AgentCard) -> Result<(), String> {
        self.check_with(card, false)
    }

    /// [`Authenticator::check`], knowing whether the server verifies client certificates, so
    /// that mutual TLS can be required.
    pub(crate) fn check_with(
        &self,
        card: &AgentCard,
        client_certificates: bool,
    ) -> Result<(), String> {
        if card.security_requirements.is_empty() {
            return Err(
                "authentication is on but the agent card has no securityRequirements: declare \
                 the schemes callers must use in the card's securitySchemes and \
                 securityRequirements"
                    .into(),
            );
        }
        for requirement in &card.security_requirements {
            for name in requirement.schemes.keys() {
                let Some(scheme) = card.security_schemes.get(name) else {
                    return Err(format!(
                        "a security requirement names scheme {name:?}, which the card's \
                         securitySchemes does not declare"
                    ));
                };
                credentials::check_readable(name, scheme, client_certificates)?;
                if !self.verifies(name) {
                    return Err(format!(
                        "the card requires scheme {name:?} but no verifier is set for it; add \
                         one with Authenticator::with_verifier({name:?}, ...)"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The caller a request proves under the card's requirements: `Ok(None)` when a
    /// requirement asks for nothing (anonymous access), else the identity named by the first
    /// scheme (in name order) of the first requirement met.
    pub(crate) async fn authenticate(
        &self,
        card: &AgentCard,
        request: &http::request::Parts,
    ) -> Result<Option<CallerIdentity>, Refusal> {
        let mut insufficient = None;
        let mut unavailable = None;
        let mut invalid = Vec::new();
        'requirements: for requirement in &card.security_requirements {
            let mut identity = None;
            for (name, scopes) in &requirement.schemes {
                let (Some(scheme), Some(verifier)) =
                    (card.security_schemes.get(name), self.verifiers.get(name))
                else {
                    continue 'requirements;
                };
                let credential = match presented(scheme, request) {
                    Presented::Nothing => continue 'requirements,
                    Presented::Ambiguous => {
                        invalid.push(name.as_str());
                        continue 'requirements;
                    }
                    Presented::Credential(credential) => credential,
                };
                match verifier.verify(&credential, &scopes.list).await {
                    Ok(caller) => {
                        identity.get_or_insert(caller);
                    }
                    Err(AuthFailure::Invalid(_)) => {
                        invalid.push(name.as_str());
                        continue 'requirements;
                    }
                    Err(AuthFailure::Insufficient(why)) => {
                        insufficient.get_or_insert((name.as_str(), scheme, scopes, why));
                        continue 'requirements;
                    }
                    Err(AuthFailure::Unavailable(why)) => {
                        unavailable.get_or_insert(why);
                        continue 'requirements;
                    }
                }
            }
            return Ok(identity);
        }
        if let Some(why) = unavailable {
            return Err(Refusal::Unavailable(format!(
                "the credential could not be checked now: {why}; retry shortly"
            )));
        }
        if let Some((name, scheme, scopes, why)) = insufficient {
            return Err(Refusal::Forbidden {
                message: format!(
                    "the credential for scheme {name:?} lacks what this agent requires: {why}"
                ),
                challenges: challenge(scheme, Some("insufficient_scope"), &scopes.list)
                    .into_iter()
                    .collect(),
            });
        }
        let message = if invalid.is_empty() {
            format!(
                "this agent requires authentication; present a credential for {} as its card \
                 declares (securitySchemes)",
                describe_requirements(card)
            )
        } else {
            format!(
                "the credential for {} was not accepted; check that it is current and meant for \
                 this agent",
                invalid
                    .iter()
                    .map(|name| format!("{name:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Err(Refusal::Unauthenticated {
            message,
            challenges: self.challenges(card, &invalid),
        })
    }

    /// One `WWW-Authenticate` value per scheme the card requires (deduplicated), marking
    /// bearer tokens that were refused as `invalid_token`.
    fn challenges(&self, card: &AgentCard, refused: &[&str]) -> Vec<String> {
        let mut challenges = Vec::new();
        for requirement in &card.security_requirements {
            for name in requirement.schemes.keys() {
                let Some(scheme) = card.security_schemes.get(name) else {
                    continue;
                };
                let error = refused.contains(&name.as_str()).then_some("invalid_token");
                if let Some(value) = challenge(scheme, error, &[])
                    && !challenges.contains(&value)
                {
                    challenges.push(value);
                }
            }
        }
        challenges
    }
}

/// The card's requirements in words: `"apiKey" or "oauth" and "mtls"`.
fn describe_requirements(card: &AgentCard) -> String {
    card.security_requirements
        .iter()
        .map(|requirement| {
            requirement
                .schemes
                .keys()
                .map(|name| format!("{name:?}"))
                .collect::<Vec<_>>()
                .join(" and ")
        })
        .filter(|all| !all.is_empty())
        .collect::<Vec<_>>()
        .join(" or ")
}
