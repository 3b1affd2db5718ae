//! The agent card: what an agent is, where it listens, and what it can do (spec §4.4, §8).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Metadata;
use crate::extensions::AgentExtension;
use crate::security::{SecurityRequirement, SecurityScheme};
use crate::serde_util;

/// The `protocolBinding` of the JSON-RPC binding.
pub const BINDING_JSONRPC: &str = "JSONRPC";
/// The `protocolBinding` of the HTTP+JSON (REST) binding.
pub const BINDING_HTTP_JSON: &str = "HTTP+JSON";
/// The `protocolBinding` of the gRPC binding.
pub const BINDING_GRPC: &str = "GRPC";
/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: &str = "1.0";
/// Where an agent serves its public card, relative to its base URL.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// An agent's self-description, served at [`AGENT_CARD_PATH`].
///
/// Required members (`name`, `description`, `version`, `capabilities`, the interface, mode and
/// skill lists) are always written, as spec §8.4.1 asks; other unset members are omitted.
///
/// ```
/// use a2a_protocol_types::agent_card::{AgentCard, AgentInterface, BINDING_JSONRPC};
///
/// let card = AgentCard::new("Echo", "Repeats what it is told.", "1.0.0")
///     .with_interface(AgentInterface::new("https://agents.example.com/a2a", BINDING_JSONRPC));
/// let json = serde_json::to_value(&card).unwrap();
/// assert_eq!(json["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
/// assert_eq!(json["defaultInputModes"][0], "text/plain");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// A human-readable name.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub name: String,
    /// What the agent does.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub description: String,
    /// Where the agent listens, in order of its preference.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(alias = "supported_interfaces")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// Who runs the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub version: String,
    /// Where its documentation is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "documentation_url")]
    pub documentation_url: Option<String>,
    /// Optional features it supports.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// Ways to authenticate, by name.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[serde(alias = "security_schemes")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Which schemes a caller must satisfy (any one entry). Also read from the v0.3 name
    /// `security`, in either shape.
    #[serde(default, alias = "security")]
    #[serde(deserialize_with = "crate::security::requirements_any_shape")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "security_requirements")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Media types it accepts by default.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(alias = "default_input_modes")]
    pub default_input_modes: Vec<String>,
    /// Media types it produces by default.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(alias = "default_output_modes")]
    pub default_output_modes: Vec<String>,
    /// What it can do.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub skills: Vec<AgentSkill>,
    /// JWS signatures over the card.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
    /// An icon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "icon_url")]
    pub icon_url: Option<String>,
}

impl AgentCard {
    /// A card with a name, description and version, text in and out, and nothing else.
    ///
    /// ```
    /// use a2a_protocol_types::AgentCard;
    ///
    /// let card = AgentCard::new("Echo", "Repeats what it is told.", "1.0.0");
    /// assert_eq!(card.name, "Echo");
    /// assert!(card.skills.is_empty() && card.supported_interfaces.is_empty());
    /// ```
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        version: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            supported_interfaces: Vec::new(),
            provider: None,
            version: version.into(),
            documentation_url: None,
            capabilities: AgentCapabilities::none(),
            security_schemes: BTreeMap::new(),
            security_requirements: Vec::new(),
            default_input_modes: vec!["text/plain".into()],
            default_output_modes: vec!["text/plain".into()],
            skills: Vec::new(),
            signatures: Vec::new(),
            icon_url: None,
        }
    }

    /// Adds an interface.
    ///
    /// ```
    /// use a2a_protocol_types::agent_card::{AgentCard, AgentInterface, BINDING_HTTP_JSON};
    ///
    /// let card = AgentCard::new("Echo", "Repeats.", "1.0.0")
    ///     .with_interface(AgentInterface::new("https://agents.example.com", BINDING_HTTP_JSON));
    /// assert_eq!(card.supported_interfaces[0].protocol_binding, "HTTP+JSON");
    /// ```
    pub fn with_interface(mut self, interface: AgentInterface) -> Self {
        self.supported_interfaces.push(interface);
        self
    }

    /// Adds a skill.
    ///
    /// ```
    /// use a2a_protocol_types::{AgentCard, AgentSkill};
    ///
    /// let card = AgentCard::new("Echo", "Repeats.", "1.0.0")
    ///     .with_skill(AgentSkill::new("echo", "Echo", "Repeats the text.", vec!["test".into()]));
    /// assert_eq!(card.skills[0].id, "echo");
    /// ```
    pub fn with_skill(mut self, skill: AgentSkill) -> Self {
        self.skills.push(skill);
        self
    }

    /// Sets the capabilities.
    ///
    /// ```
    /// use a2a_protocol_types::{AgentCapabilities, AgentCard};
    ///
    /// let card = AgentCard::new("Echo", "Repeats.", "1.0.0")
    ///     .with_capabilities(AgentCapabilities::none().with_streaming(true));
    /// assert_eq!(card.capabilities.streaming, Some(true));
    /// ```
    pub fn with_capabilities(mut self, capabilities: AgentCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Sets the provider.
    ///
    /// ```
    /// use a2a_protocol_types::{AgentCard, AgentProvider};
    ///
    /// let provider = AgentProvider {
    ///     url: "https://example.com".into(),
    ///     organization: "Example Ltd".into(),
    /// };
    /// let card = AgentCard::new("Echo", "Repeats.", "1.0.0").with_provider(provider);
    /// assert_eq!(card.provider.unwrap().organization, "Example Ltd");
    /// ```
    pub fn with_provider(mut self, provider: AgentProvider) -> Self {
        self.provider = Some(provider);
        self
    }

    /// Whether the card lists an extension with this URI.
    ///
    /// ```
    /// use a2a_protocol_types::idempotency::IDEMPOTENCY_EXTENSION_URI;
    /// use a2a_protocol_types::{AgentCapabilities, AgentCard, AgentExtension};
    ///
    /// let card = AgentCard::new("Echo", "Repeats.", "1.0.0").with_capabilities(
    ///     AgentCapabilities::none().with_extension(AgentExtension::new(IDEMPOTENCY_EXTENSION_URI)),
    /// );
    /// assert!(card.supports_extension(IDEMPOTENCY_EXTENSION_URI));
    /// assert!(!card.supports_extension("https://example.com/other"));
    /// ```
    pub fn supports_extension(&self, uri: &str) -> bool {
        self.capabilities.supports_extension(uri)
    }
}

/// Who runs an agent.
///
/// ```
/// use a2a_protocol_types::AgentProvider;
///
/// let provider: AgentProvider =
///     serde_json::from_str(r#"{"url": "https://example.com", "organization": "Example"}"#).unwrap();
/// assert_eq!(provider.organization, "Example");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// The provider's website.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub url: String,
    /// The provider's name.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub organization: String,
}

/// Optional features an agent supports. An absent flag means "not supported".
///
/// ```
/// use a2a_protocol_types::AgentCapabilities;
///
/// let capabilities = AgentCapabilities::none().with_streaming(true);
/// assert_eq!(serde_json::to_string(&capabilities).unwrap(), r#"{"streaming":true}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` and `SubscribeToTask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// The push notification operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "push_notifications")]
    pub push_notifications: Option<bool>,
    /// Protocol extensions the agent supports.
    #[serde(default, deserialize_with = "serde_util::non_empty_vec")]
    #[serde(skip_serializing_if = "serde_util::is_none_or_empty")]
    pub extensions: Option<Vec<AgentExtension>>,
    /// `GetExtendedAgentCard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "extended_agent_card")]
    pub extended_agent_card: Option<bool>,
}

impl AgentCapabilities {
    /// No optional capability declared.
    ///
    /// ```
    /// use a2a_protocol_types::AgentCapabilities;
    ///
    /// assert_eq!(serde_json::to_string(&AgentCapabilities::none()).unwrap(), "{}");
    /// ```
    pub fn none() -> Self {
        Self::default()
    }

    /// Sets `streaming`.
    ///
    /// ```
    /// use a2a_protocol_types::AgentCapabilities;
    ///
    /// assert_eq!(AgentCapabilities::none().with_streaming(true).streaming, Some(true));
    /// ```
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = Some(streaming);
        self
    }

    /// Sets `pushNotifications`.
    ///
    /// ```
    /// use a2a_protocol_types::AgentCapabilities;
    ///
    /// let capabilities = AgentCapabilities::none().with_push_notifications(false);
    /// assert_eq!(capabilities.push_notifications, Some(false));
    /// ```
    pub fn with_push_notifications(mut self, push: bool) -> Self {
        self.push_notifications = Some(push);
        self
    }

    /// Sets `extendedAgentCard`.
    ///
    /// ```
    /// use a2a_protocol_types::AgentCapabilities;
    ///
    /// let capabilities = AgentCapabilities::none().with_extended_agent_card(true);
    /// assert_eq!(capabilities.extended_agent_card, Some(true));
    /// ```
    pub fn with_extended_agent_card(mut self, extended: bool) -> Self {
        self.extended_agent_card = Some(extended);
        self
    }

    /// Adds an extension (replacing one with the same URI).
    ///
    /// ```
    /// use a2a_protocol_types::{AgentCapabilities, AgentExtension};
    ///
    /// let capabilities = AgentCapabilities::none()
    ///     .with_extension(AgentExtension::new("https://example.com/ext/v1"))
    ///     .with_extension(AgentExtension::new("https://example.com/ext/v1").with_required(true));
    /// let listed = capabilities.extensions.unwrap();
    /// assert_eq!(listed.len(), 1, "the second replaced the first");
    /// assert!(listed[0].required);
    /// ```
    pub fn with_extension(mut self, extension: AgentExtension) -> Self {
        let extensions = self.extensions.get_or_insert_with(Vec::new);
        extensions.retain(|e| e.uri != extension.uri);
        extensions.push(extension);
        self
    }

    /// Whether an extension with this URI is listed.
    ///
    /// ```
    /// use a2a_protocol_types::{AgentCapabilities, AgentExtension};
    ///
    /// let capabilities =
    ///     AgentCapabilities::none().with_extension(AgentExtension::new("https://example.com/ext/v1"));
    /// assert!(capabilities.supports_extension("https://example.com/ext/v1"));
    /// ```
    pub fn supports_extension(&self, uri: &str) -> bool {
        self.extensions
            .as_ref()
            .is_some_and(|exts| exts.iter().any(|e| e.uri == uri))
    }
}

/// A capability the agent offers.
///
/// ```
/// use a2a_protocol_types::AgentSkill;
///
/// let skill = AgentSkill::new("translate", "Translate", "Translates text.", vec!["language".into()]);
/// let json = serde_json::to_value(&skill).unwrap();
/// assert_eq!(json["tags"][0], "language");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Unique within the card.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub id: String,
    /// A human-readable name.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub name: String,
    /// What it does.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub description: String,
    /// Keywords.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Media types it accepts, overriding the card's default.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "input_modes")]
    pub input_modes: Vec<String>,
    /// Media types it produces, overriding the card's default.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "output_modes")]
    pub output_modes: Vec<String>,
    /// Security requirements specific to this skill.
    #[serde(default, alias = "security")]
    #[serde(deserialize_with = "crate::security::requirements_any_shape")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "security_requirements")]
    pub security_requirements: Vec<SecurityRequirement>,
}

impl AgentSkill {
    /// A skill with an id, name, description and tags.
    ///
    /// ```
    /// use a2a_protocol_types::AgentSkill;
    ///
    /// let skill = AgentSkill::new("echo", "Echo", "Repeats the text.", vec!["test".into()]);
    /// assert_eq!((skill.id.as_str(), skill.tags.len()), ("echo", 1));
    /// ```
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        tags: Vec<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            description: description.into(),
            tags,
            examples: Vec::new(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
            security_requirements: Vec::new(),
        }
    }
}

/// An endpoint where the agent speaks one binding.
///
/// ```
/// use a2a_protocol_types::AgentInterface;
///
/// let interface: AgentInterface = serde_json::from_str(
///     r#"{"url": "https://a.example/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}"#,
/// )
/// .unwrap();
/// assert_eq!(interface.protocol_binding, "JSONRPC");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The endpoint URL.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub url: String,
    /// [`BINDING_JSONRPC`], [`BINDING_HTTP_JSON`], [`BINDING_GRPC`], or a custom binding's URI.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(alias = "protocol_binding")]
    pub protocol_binding: String,
    /// The tenant to put in every request sent to this interface.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The A2A version spoken there (`Major.Minor`).
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(alias = "protocol_version")]
    pub protocol_version: String,
}

impl AgentInterface {
    /// An interface speaking `binding` at `url`, in this crate's protocol version.
    ///
    /// ```
    /// use a2a_protocol_types::agent_card::{AgentInterface, BINDING_JSONRPC, PROTOCOL_VERSION};
    ///
    /// let interface = AgentInterface::new("https://a.example/rpc", BINDING_JSONRPC);
    /// assert_eq!(interface.protocol_version, PROTOCOL_VERSION);
    /// ```
    pub fn new(url: impl Into<String>, binding: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            protocol_binding: binding.into(),
            tenant: String::new(),
            protocol_version: PROTOCOL_VERSION.into(),
        }
    }

    /// Sets the tenant.
    ///
    /// ```
    /// use a2a_protocol_types::agent_card::{AgentInterface, BINDING_HTTP_JSON};
    ///
    /// let interface = AgentInterface::new("https://a.example", BINDING_HTTP_JSON).with_tenant("acme");
    /// assert_eq!(interface.tenant, "acme");
    /// ```
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }
}

/// A JWS signature over the card (RFC 7515, spec §8.4).
///
/// ```
/// use a2a_protocol_types::agent_card::AgentCardSignature;
///
/// let signature: AgentCardSignature =
///     serde_json::from_str(r#"{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "c2ln"}"#).unwrap();
/// assert_eq!(signature.signature, "c2ln");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCardSignature {
    /// The base64url-encoded protected header.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub protected: String,
    /// The base64url-encoded signature.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub signature: String,
    /// The unprotected header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Metadata>,
}
