//! Security schemes an agent card declares (spec §4.5), as OpenAPI describes them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::serde_util;

/// One way to authenticate to the agent: exactly one of five kinds.
///
/// ```
/// use a2a_protocol_types::security::{HttpAuthSecurityScheme, SecurityScheme};
///
/// let scheme = SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
///     description: None,
///     scheme: "Bearer".into(),
///     bearer_format: Some("JWT".into()),
/// });
/// let json = serde_json::to_value(&scheme).unwrap();
/// assert_eq!(json["httpAuthSecurityScheme"]["bearerFormat"], "JWT");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SecurityScheme {
    /// An API key in a header, query parameter or cookie.
    #[serde(rename = "apiKeySecurityScheme")]
    #[serde(alias = "api_key_security_scheme")]
    ApiKey(ApiKeySecurityScheme),
    /// HTTP authentication, such as Bearer or Basic.
    #[serde(rename = "httpAuthSecurityScheme")]
    #[serde(alias = "http_auth_security_scheme")]
    HttpAuth(HttpAuthSecurityScheme),
    /// OAuth 2.0.
    #[serde(rename = "oauth2SecurityScheme")]
    #[serde(alias = "oauth2_security_scheme")]
    OAuth2(OAuth2SecurityScheme),
    /// OpenID Connect.
    #[serde(rename = "openIdConnectSecurityScheme")]
    #[serde(alias = "open_id_connect_security_scheme")]
    OpenIdConnect(OpenIdConnectSecurityScheme),
    /// Mutual TLS.
    #[serde(rename = "mtlsSecurityScheme")]
    #[serde(alias = "mtls_security_scheme")]
    MutualTls(MutualTlsSecurityScheme),
}

/// An API key.
///
/// ```
/// use a2a_protocol_types::security::SecurityScheme;
///
/// let scheme: SecurityScheme = serde_json::from_str(
///     r#"{"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}"#,
/// )
/// .unwrap();
/// assert!(matches!(scheme, SecurityScheme::ApiKey(key) if key.name == "X-API-Key"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeySecurityScheme {
    /// What it is for.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where the key goes: `query`, `header` or `cookie`.
    pub location: String,
    /// The header, query parameter or cookie name.
    pub name: String,
}

/// HTTP authentication (RFC 7235).
///
/// ```
/// use a2a_protocol_types::security::HttpAuthSecurityScheme;
///
/// let basic: HttpAuthSecurityScheme = serde_json::from_str(r#"{"scheme": "Basic"}"#).unwrap();
/// assert_eq!((basic.scheme.as_str(), basic.bearer_format), ("Basic", None));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// What it is for.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The scheme name, such as `Bearer`.
    pub scheme: String,
    /// A hint of the bearer token's format, such as `JWT`.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "bearer_format")]
    pub bearer_format: Option<String>,
}

/// OAuth 2.0.
///
/// ```
/// use a2a_protocol_types::security::{OAuth2SecurityScheme, OAuthFlows};
///
/// let scheme: OAuth2SecurityScheme = serde_json::from_str(
///     r#"{"flows": {"clientCredentials": {"tokenUrl": "https://auth.example/token",
///         "scopes": {"tasks:write": "Send messages"}}}}"#,
/// )
/// .unwrap();
/// assert!(matches!(scheme.flows, OAuthFlows::ClientCredentials(flow) if flow.scopes.contains_key("tasks:write")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    /// What it is for.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The flow the agent supports.
    pub flows: OAuthFlows,
    /// The RFC 8414 authorization server metadata URL.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "oauth2_metadata_url")]
    pub oauth2_metadata_url: Option<String>,
}

/// OpenID Connect.
///
/// ```
/// use a2a_protocol_types::security::OpenIdConnectSecurityScheme;
///
/// let scheme = OpenIdConnectSecurityScheme {
///     description: None,
///     open_id_connect_url: "https://auth.example/.well-known/openid-configuration".into(),
/// };
/// assert!(serde_json::to_value(&scheme).unwrap()["openIdConnectUrl"].is_string());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    /// What it is for.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The OpenID Connect discovery URL.
    #[serde(alias = "open_id_connect_url")]
    pub open_id_connect_url: String,
}

/// Mutual TLS.
///
/// ```
/// use a2a_protocol_types::security::{MutualTlsSecurityScheme, SecurityScheme};
///
/// let scheme = SecurityScheme::MutualTls(MutualTlsSecurityScheme::default());
/// assert_eq!(serde_json::to_string(&scheme).unwrap(), r#"{"mtlsSecurityScheme":{}}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MutualTlsSecurityScheme {
    /// What it is for.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// An OAuth 2.0 flow: exactly one of five kinds.
///
/// ```
/// use a2a_protocol_types::security::{OAuthFlows, PasswordOAuthFlow};
///
/// let flows = OAuthFlows::Password(PasswordOAuthFlow::default());
/// assert!(serde_json::to_value(&flows).unwrap().get("password").is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OAuthFlows {
    /// The authorization code flow.
    #[serde(alias = "authorization_code")]
    AuthorizationCode(AuthorizationCodeOAuthFlow),
    /// The client credentials flow.
    #[serde(alias = "client_credentials")]
    ClientCredentials(ClientCredentialsOAuthFlow),
    /// The implicit flow (deprecated by OAuth 2.1).
    Implicit(ImplicitOAuthFlow),
    /// The password flow (deprecated by OAuth 2.1).
    Password(PasswordOAuthFlow),
    /// The device code flow (RFC 8628).
    #[serde(alias = "device_code")]
    DeviceCode(DeviceCodeOAuthFlow),
}

/// Scope names and what they grant.
pub type Scopes = BTreeMap<String, String>;

/// The authorization code flow.
///
/// ```
/// use a2a_protocol_types::security::AuthorizationCodeOAuthFlow;
///
/// let flow = AuthorizationCodeOAuthFlow {
///     authorization_url: "https://auth.example/authorize".into(),
///     token_url: "https://auth.example/token".into(),
///     refresh_url: None,
///     scopes: [("tasks".to_owned(), "Use the agent".to_owned())].into(),
///     pkce_required: true,
/// };
/// assert_eq!(serde_json::to_value(&flow).unwrap()["pkceRequired"], true);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationCodeOAuthFlow {
    /// The authorization endpoint.
    #[serde(alias = "authorization_url")]
    pub authorization_url: String,
    /// The token endpoint.
    #[serde(alias = "token_url")]
    pub token_url: String,
    /// The refresh endpoint.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "refresh_url")]
    pub refresh_url: Option<String>,
    /// The scopes.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub scopes: Scopes,
    /// Whether PKCE (RFC 7636) is required.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "serde_util::is_false")]
    #[serde(alias = "pkce_required")]
    pub pkce_required: bool,
}

/// The client credentials flow.
///
/// ```
/// use a2a_protocol_types::security::ClientCredentialsOAuthFlow;
///
/// let flow: ClientCredentialsOAuthFlow =
///     serde_json::from_str(r#"{"tokenUrl": "https://auth.example/token", "scopes": {}}"#).unwrap();
/// assert_eq!(flow.token_url, "https://auth.example/token");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCredentialsOAuthFlow {
    /// The token endpoint.
    #[serde(alias = "token_url")]
    pub token_url: String,
    /// The refresh endpoint.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "refresh_url")]
    pub refresh_url: Option<String>,
    /// The scopes.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub scopes: Scopes,
}

/// The implicit flow.
///
/// ```
/// use a2a_protocol_types::security::ImplicitOAuthFlow;
///
/// let flow: ImplicitOAuthFlow = serde_json::from_str(r#"{"authorizationUrl": "https://auth.example/a"}"#).unwrap();
/// assert!(flow.scopes.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImplicitOAuthFlow {
    /// The authorization endpoint.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "authorization_url")]
    pub authorization_url: Option<String>,
    /// The refresh endpoint.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "refresh_url")]
    pub refresh_url: Option<String>,
    /// The scopes.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub scopes: Scopes,
}

/// The password flow.
///
/// ```
/// use a2a_protocol_types::security::PasswordOAuthFlow;
///
/// let flow = PasswordOAuthFlow { token_url: Some("https://auth.example/token".into()), ..Default::default() };
/// assert_eq!(serde_json::to_value(&flow).unwrap()["tokenUrl"], "https://auth.example/token");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PasswordOAuthFlow {
    /// The token endpoint.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "token_url")]
    pub token_url: Option<String>,
    /// The refresh endpoint.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "refresh_url")]
    pub refresh_url: Option<String>,
    /// The scopes.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub scopes: Scopes,
}

/// The device code flow.
///
/// ```
/// use a2a_protocol_types::security::DeviceCodeOAuthFlow;
///
/// let flow: DeviceCodeOAuthFlow = serde_json::from_str(
///     r#"{"deviceAuthorizationUrl": "https://auth.example/device", "tokenUrl": "https://auth.example/token", "scopes": {}}"#,
/// )
/// .unwrap();
/// assert_eq!(flow.device_authorization_url, "https://auth.example/device");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCodeOAuthFlow {
    /// The device authorization endpoint.
    #[serde(alias = "device_authorization_url")]
    pub device_authorization_url: String,
    /// The token endpoint.
    #[serde(alias = "token_url")]
    pub token_url: String,
    /// The refresh endpoint.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "refresh_url")]
    pub refresh_url: Option<String>,
    /// The scopes.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub scopes: Scopes,
}

/// A list of strings; the proto wraps map values in it.
///
/// ```
/// use a2a_protocol_types::security::StringList;
///
/// let scopes = StringList { list: vec!["tasks:read".into()] };
/// assert_eq!(serde_json::to_string(&scopes).unwrap(), r#"{"list":["tasks:read"]}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StringList {
    /// The strings.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub list: Vec<String>,
}

/// Schemes that must all be satisfied, each with the scopes it needs.
///
/// ```
/// use a2a_protocol_types::AgentCard;
///
/// // The v1.0 shape and the v0.3 / OpenAPI shape read the same.
/// let v1: AgentCard = serde_json::from_value(serde_json::json!({
///     "name": "A", "description": "B", "version": "1", "capabilities": {},
///     "securityRequirements": [{"schemes": {"oauth": {"list": ["tasks"]}}}],
/// }))
/// .unwrap();
/// let v03: AgentCard = serde_json::from_value(serde_json::json!({
///     "name": "A", "description": "B", "version": "1", "capabilities": {},
///     "security": [{"oauth": ["tasks"]}],
/// }))
/// .unwrap();
/// assert_eq!(v1.security_requirements, v03.security_requirements);
/// assert_eq!(v1.security_requirements[0].schemes["oauth"].list, ["tasks"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecurityRequirement {
    /// Scheme name (a key of the card's `securitySchemes`) to required scopes.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub schemes: BTreeMap<String, StringList>,
}

/// Reads security requirements in the v1.0 shape (`[{"schemes": {"name": {"list": [...]}}}]`)
/// or the v0.3 / OpenAPI shape (`[{"name": ["scope", ...]}]`).
pub(crate) fn requirements_any_shape<'de, D>(
    deserializer: D,
) -> Result<Vec<SecurityRequirement>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::de::Error as _;
    use serde_json::Value;

    let items: Vec<serde_json::Map<String, Value>> = serde_util::nullable(deserializer)?;
    items
        .into_iter()
        .map(|item| {
            let is_v1 = item.len() == 1 && item.get("schemes").is_some_and(Value::is_object);
            if is_v1 {
                return SecurityRequirement::deserialize(Value::Object(item))
                    .map_err(D::Error::custom);
            }
            let schemes = item
                .into_iter()
                .map(|(name, scopes)| {
                    let list = Vec::<String>::deserialize(scopes).map_err(D::Error::custom)?;
                    Ok((name, StringList { list }))
                })
                .collect::<Result<_, D::Error>>()?;
            Ok(SecurityRequirement { schemes })
        })
        .collect()
}
