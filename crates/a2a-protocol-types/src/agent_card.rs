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
    pub supported_interfaces: Vec<AgentInterface>,
    /// Who runs the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub version: String,
    /// Where its documentation is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// Optional features it supports.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// Ways to authenticate, by name.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Which schemes a caller must satisfy (any one entry). Also read from the v0.3 name
    /// `security`, in either shape.
    #[serde(default, alias = "security")]
    #[serde(deserialize_with = "crate::security::requirements_any_shape")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Media types it accepts by default.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub default_input_modes: Vec<String>,
    /// Media types it produces by default.
    #[serde(default, deserialize_with = "serde_util::nullable")]
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
    pub icon_url: Option<String>,
}

impl AgentCard {
    /// A card with a name, description and version, text in and out, and nothing else.
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
    pub fn with_interface(mut self, interface: AgentInterface) -> Self {
        self.supported_interfaces.push(interface);
        self
    }

    /// Adds a skill.
    pub fn with_skill(mut self, skill: AgentSkill) -> Self {
        self.skills.push(skill);
        self
    }

    /// Sets the capabilities.
    pub fn with_capabilities(mut self, capabilities: AgentCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Sets the provider.
    pub fn with_provider(mut self, provider: AgentProvider) -> Self {
        self.provider = Some(provider);
        self
    }

    /// Whether the card lists an extension with this URI.
    pub fn supports_extension(&self, uri: &str) -> bool {
        self.capabilities.supports_extension(uri)
    }
}

/// Who runs an agent.
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` and `SubscribeToTask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// The push notification operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// Protocol extensions the agent supports.
    #[serde(default, deserialize_with = "serde_util::non_empty_vec")]
    #[serde(skip_serializing_if = "serde_util::is_none_or_empty")]
    pub extensions: Option<Vec<AgentExtension>>,
    /// `GetExtendedAgentCard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

impl AgentCapabilities {
    /// No optional capability declared.
    pub fn none() -> Self {
        Self::default()
    }

    /// Sets `streaming`.
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = Some(streaming);
        self
    }

    /// Sets `pushNotifications`.
    pub fn with_push_notifications(mut self, push: bool) -> Self {
        self.push_notifications = Some(push);
        self
    }

    /// Sets `extendedAgentCard`.
    pub fn with_extended_agent_card(mut self, extended: bool) -> Self {
        self.extended_agent_card = Some(extended);
        self
    }

    /// Adds an extension (replacing one with the same URI).
    pub fn with_extension(mut self, extension: AgentExtension) -> Self {
        let extensions = self.extensions.get_or_insert_with(Vec::new);
        extensions.retain(|e| e.uri != extension.uri);
        extensions.push(extension);
        self
    }

    /// Whether an extension with this URI is listed.
    pub fn supports_extension(&self, uri: &str) -> bool {
        self.extensions
            .as_ref()
            .is_some_and(|exts| exts.iter().any(|e| e.uri == uri))
    }
}

/// A capability the agent offers.
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
    pub input_modes: Vec<String>,
    /// Media types it produces, overriding the card's default.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    /// Security requirements specific to this skill.
    #[serde(default, alias = "security")]
    #[serde(deserialize_with = "crate::security::requirements_any_shape")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
}

impl AgentSkill {
    /// A skill with an id, name, description and tags.
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The endpoint URL.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub url: String,
    /// [`BINDING_JSONRPC`], [`BINDING_HTTP_JSON`], [`BINDING_GRPC`], or a custom binding's URI.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub protocol_binding: String,
    /// The tenant to put in every request sent to this interface.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The A2A version spoken there (`Major.Minor`).
    #[serde(default, deserialize_with = "serde_util::nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub protocol_version: String,
}

impl AgentInterface {
    /// An interface speaking `binding` at `url`, in this crate's protocol version.
    pub fn new(url: impl Into<String>, binding: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            protocol_binding: binding.into(),
            tenant: String::new(),
            protocol_version: PROTOCOL_VERSION.into(),
        }
    }

    /// Sets the tenant.
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }
}

/// A JWS signature over the card (RFC 7515, spec §8.4).
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
