//! Bearer tokens that are JWTs, verified with the `jsonwebtoken` crate against a key given
//! once or a key set (JWKS) fetched from the issuer and refreshed as it rotates.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{DecodingKey, Validation};
use serde_json::{Map, Value};

use super::{AuthFailure, CallerIdentity, CredentialVerifier};

/// How long fetched keys are used before they are fetched again.
const KEYS_FRESH_FOR: Duration = Duration::from_secs(600);
/// The soonest a token naming an unknown key may make the set be fetched again: a caller
/// presenting made-up key ids cannot make the server hammer the issuer.
const REFETCH_AT_MOST_EVERY: Duration = Duration::from_secs(30);
/// How long a key set fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// A token's claims, or why its signature or claims were refused.
type Verified = Result<Map<String, Value>, AuthFailure>;

enum Keys {
    Static(Box<DecodingKey>),
    Jwks {
        url: String,
        http: reqwest::Client,
        cache: Mutex<Option<FetchedKeys>>,
        /// Serialises fetches, so a burst of requests fetches once.
        fetching: tokio::sync::Mutex<()>,
    },
}

struct FetchedKeys {
    by_id: HashMap<String, DecodingKey>,
    /// Keys without an id, tried in turn for a token without one.
    anonymous: Vec<DecodingKey>,
    fetched: Instant,
}

/// Verifies JWT bearer tokens: signature, expiry and not-before always, issuer and audience
/// when the [`Validation`] names them, and the scopes a requirement lists (from the `scope`
/// claim, space-separated, or `scp`). The caller is the `sub` claim, or another claim named
/// with [`JwtVerifier::with_identity_claim`].
///
/// ```
/// use a2a_protocol_server::auth::{Algorithm, CredentialVerifier, DecodingKey, JwtVerifier, Validation};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut validation = Validation::new(Algorithm::HS256);
/// validation.set_issuer(&["https://login.example.com"]);
/// let verifier = JwtVerifier::new(DecodingKey::from_secret(b"a shared secret of 32 bytes or more"), validation);
/// assert!(verifier.verify("not.a.jwt", &[]).await.is_err());
///
/// // Or with the issuer's published keys, fetched when first needed:
/// let verifier = JwtVerifier::from_jwks_url(
///     "https://login.example.com/.well-known/jwks.json",
///     Validation::new(Algorithm::RS256),
/// );
/// # let _ = verifier;
/// # }
/// ```
pub struct JwtVerifier {
    keys: Keys,
    validation: Validation,
    identity_claim: String,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = match &self.keys {
            Keys::Static(_) => "static key".to_owned(),
            Keys::Jwks { url, .. } => format!("JWKS at {url}"),
        };
        f.debug_struct("JwtVerifier")
            .field("keys", &keys)
            .field("algorithms", &self.validation.algorithms)
            .field("identity_claim", &self.identity_claim)
            .finish()
    }
}

impl JwtVerifier {
    /// Verifies tokens signed with `key`.
    ///
    /// ```
    /// use a2a_protocol_server::auth::{Algorithm, DecodingKey, JwtVerifier, Validation};
    ///
    /// let verifier = JwtVerifier::new(DecodingKey::from_secret(b"0123456789abcdef0123456789abcdef"), Validation::new(Algorithm::HS256));
    /// # let _ = verifier;
    /// ```
    pub fn new(key: DecodingKey, validation: Validation) -> Self {
        Self {
            keys: Keys::Static(Box::new(key)),
            validation,
            identity_claim: "sub".into(),
        }
    }

    /// Verifies tokens signed with one of the keys published at `url` (a JSON Web Key Set),
    /// fetched at the first token, again every ten minutes, and when a token names a key the
    /// set does not hold (at most every 30 s). A set that cannot be fetched makes requests
    /// answer 503, not 401: the caller's token may well be good.
    ///
    /// ```
    /// use a2a_protocol_server::auth::{Algorithm, JwtVerifier, Validation};
    ///
    /// let verifier = JwtVerifier::from_jwks_url("https://login.example.com/jwks.json", Validation::new(Algorithm::ES256));
    /// # let _ = verifier;
    /// ```
    pub fn from_jwks_url(url: impl Into<String>, validation: Validation) -> Self {
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .unwrap_or_default();
        Self {
            keys: Keys::Jwks {
                url: url.into(),
                http,
                cache: Mutex::new(None),
                fetching: tokio::sync::Mutex::new(()),
            },
            validation,
            identity_claim: "sub".into(),
        }
    }

    /// Names the caller by `claim` instead of `sub` (say `client_id` or `email`).
    ///
    /// ```
    /// use a2a_protocol_server::auth::{Algorithm, DecodingKey, JwtVerifier, Validation};
    ///
    /// let verifier = JwtVerifier::new(DecodingKey::from_secret(b"0123456789abcdef0123456789abcdef"), Validation::new(Algorithm::HS256))
    ///     .with_identity_claim("client_id");
    /// # let _ = verifier;
    /// ```
    pub fn with_identity_claim(mut self, claim: impl Into<String>) -> Self {
        self.identity_claim = claim.into();
        self
    }

    /// The claims of `token` if one of the keys verifies it.
    async fn claims(&self, token: &str) -> Result<Map<String, Value>, AuthFailure> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| AuthFailure::Invalid(format!("the bearer token is not a JWT: {e}")))?;
        let decode = |key: &DecodingKey| {
            jsonwebtoken::decode::<Map<String, Value>>(token, key, &self.validation)
                .map(|data| data.claims)
                .map_err(|e| AuthFailure::Invalid(format!("the JWT was not accepted: {e}")))
        };
        match &self.keys {
            Keys::Static(key) => decode(key),
            Keys::Jwks { .. } => {
                let kid = header.kid.as_deref();
                let mut last = None;
                for refetch in [false, true] {
                    match self.with_jwks(kid, refetch, &decode).await? {
                        Some(result @ Ok(_)) => return result,
                        Some(Err(failure)) => last = Some(failure),
                        None => {}
                    }
                }
                Err(last.unwrap_or_else(|| {
                    AuthFailure::Invalid(
                        "the JWT names a key the issuer does not publish".to_owned(),
                    )
                }))
            }
        }
    }

    /// Runs `decode` with the key set's key for `kid` (or each key without an id): `None`
    /// when the set holds no such key. `refetch` fetches the set first if it may be.
    async fn with_jwks(
        &self,
        kid: Option<&str>,
        refetch: bool,
        decode: &(dyn Fn(&DecodingKey) -> Verified + Sync),
    ) -> Result<Option<Verified>, AuthFailure> {
        let Keys::Jwks {
            url,
            http,
            cache,
            fetching,
        } = &self.keys
        else {
            return Ok(None);
        };
        let due = |cache: &Option<FetchedKeys>, refetch: bool| match cache {
            None => true,
            Some(keys) => {
                let age = keys.fetched.elapsed();
                age >= KEYS_FRESH_FOR || (refetch && age >= REFETCH_AT_MOST_EVERY)
            }
        };
        if due(&lock(cache), refetch) {
            let _one_fetch = fetching.lock().await;
            if due(&lock(cache), refetch) {
                let fetched = fetch(http, url).await?;
                *lock(cache) = Some(fetched);
            }
        } else if refetch {
            return Ok(None);
        }
        let cache = lock(cache);
        let Some(keys) = cache.as_ref() else {
            return Ok(None);
        };
        Ok(match kid {
            Some(kid) => keys.by_id.get(kid).map(decode),
            None => keys
                .anonymous
                .iter()
                .map(decode)
                .find(Result::is_ok)
                .or_else(|| keys.anonymous.first().map(decode)),
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

async fn fetch(http: &reqwest::Client, url: &str) -> Result<FetchedKeys, AuthFailure> {
    let unavailable = |e: &dyn std::fmt::Display| {
        AuthFailure::Unavailable(format!(
            "the signing keys at {url} could not be fetched: {e}"
        ))
    };
    let response = http
        .get(url)
        .send()
        .await
        .map_err(|e| unavailable(&e))?
        .error_for_status()
        .map_err(|e| unavailable(&e))?;
    let set: JwkSet = response.json().await.map_err(|e| unavailable(&e))?;
    let mut by_id = HashMap::new();
    let mut anonymous = Vec::new();
    for jwk in &set.keys {
        // A key of a kind this build cannot use is skipped, not fatal: the set may mix kinds.
        let Ok(key) = DecodingKey::from_jwk(jwk) else {
            continue;
        };
        match &jwk.common.key_id {
            Some(kid) => {
                by_id.insert(kid.clone(), key);
            }
            None => anonymous.push(key),
        }
    }
    Ok(FetchedKeys {
        by_id,
        anonymous,
        fetched: Instant::now(),
    })
}

/// The scopes a token grants: `scope` (space-separated, RFC 8693 and OAuth 2.0 access
/// tokens) or `scp` (a string or an array, as several issuers write it).
fn granted_scopes(claims: &Map<String, Value>) -> Vec<&str> {
    let mut scopes = Vec::new();
    for claim in ["scope", "scp"] {
        match claims.get(claim) {
            Some(Value::String(s)) => scopes.extend(s.split_whitespace()),
            Some(Value::Array(items)) => scopes.extend(items.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    scopes
}

#[async_trait]
impl CredentialVerifier for JwtVerifier {
    async fn verify(
        &self,
        credential: &str,
        scopes: &[String],
    ) -> Result<CallerIdentity, AuthFailure> {
        let claims = self.claims(credential).await?;
        let caller = match claims.get(&self.identity_claim) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => {
                return Err(AuthFailure::Invalid(format!(
                    "the JWT has no {:?} claim to name the caller by",
                    self.identity_claim
                )));
            }
        };
        let granted = granted_scopes(&claims);
        let missing: Vec<&str> = scopes
            .iter()
            .map(String::as_str)
            .filter(|s| !granted.contains(s))
            .collect();
        if !missing.is_empty() {
            return Err(AuthFailure::Insufficient(format!(
                "the token lacks scope {}",
                missing.join(", ")
            )));
        }
        Ok(CallerIdentity(caller))
    }
}
