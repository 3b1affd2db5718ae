//! Agent cards and their security schemes.

use a2a_protocol_types::agent_card::AgentCardSignature;
use a2a_protocol_types::security::{
    ApiKeySecurityScheme, AuthorizationCodeOAuthFlow, ClientCredentialsOAuthFlow,
    DeviceCodeOAuthFlow, HttpAuthSecurityScheme, ImplicitOAuthFlow, MutualTlsSecurityScheme,
    OAuth2SecurityScheme, OAuthFlows, OpenIdConnectSecurityScheme, PasswordOAuthFlow,
    SecurityRequirement, SecurityScheme, StringList,
};
use a2a_protocol_types::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
};

use super::{ProtoError, from_metadata, required, some, to_metadata};
use crate::pb;

impl From<AgentCard> for pb::AgentCard {
    fn from(card: AgentCard) -> Self {
        pb::AgentCard {
            name: card.name,
            description: card.description,
            supported_interfaces: card
                .supported_interfaces
                .into_iter()
                .map(Into::into)
                .collect(),
            provider: card.provider.map(|p| pb::AgentProvider {
                url: p.url,
                organization: p.organization,
            }),
            version: card.version,
            documentation_url: card.documentation_url,
            capabilities: Some(card.capabilities.into()),
            security_schemes: card
                .security_schemes
                .into_iter()
                .map(|(name, scheme)| (name, scheme.into()))
                .collect(),
            security_requirements: requirements_to(card.security_requirements),
            default_input_modes: card.default_input_modes,
            default_output_modes: card.default_output_modes,
            skills: card.skills.into_iter().map(Into::into).collect(),
            signatures: card
                .signatures
                .into_iter()
                .map(|s| pb::AgentCardSignature {
                    protected: s.protected,
                    signature: s.signature,
                    header: to_metadata(s.header.as_ref()),
                })
                .collect(),
            icon_url: card.icon_url,
        }
    }
}

impl TryFrom<pb::AgentCard> for AgentCard {
    type Error = ProtoError;

    fn try_from(card: pb::AgentCard) -> Result<Self, ProtoError> {
        Ok(AgentCard {
            name: card.name,
            description: card.description,
            supported_interfaces: card
                .supported_interfaces
                .into_iter()
                .map(Into::into)
                .collect(),
            provider: card.provider.map(|p| AgentProvider {
                url: p.url,
                organization: p.organization,
            }),
            version: card.version,
            documentation_url: card.documentation_url,
            capabilities: required(card.capabilities, "AgentCard.capabilities")?.into(),
            security_schemes: card
                .security_schemes
                .into_iter()
                .map(|(name, scheme)| Ok((name, scheme.try_into()?)))
                .collect::<Result<_, ProtoError>>()?,
            security_requirements: requirements_from(card.security_requirements),
            default_input_modes: card.default_input_modes,
            default_output_modes: card.default_output_modes,
            skills: card.skills.into_iter().map(Into::into).collect(),
            signatures: card
                .signatures
                .into_iter()
                .map(|s| AgentCardSignature {
                    protected: s.protected,
                    signature: s.signature,
                    header: from_metadata(s.header),
                })
                .collect(),
            icon_url: card.icon_url,
        })
    }
}

impl From<AgentInterface> for pb::AgentInterface {
    fn from(interface: AgentInterface) -> Self {
        pb::AgentInterface {
            url: interface.url,
            protocol_binding: interface.protocol_binding,
            tenant: interface.tenant,
            protocol_version: interface.protocol_version,
        }
    }
}

impl From<pb::AgentInterface> for AgentInterface {
    fn from(interface: pb::AgentInterface) -> Self {
        AgentInterface {
            url: interface.url,
            protocol_binding: interface.protocol_binding,
            tenant: interface.tenant,
            protocol_version: interface.protocol_version,
        }
    }
}

impl From<AgentCapabilities> for pb::AgentCapabilities {
    fn from(capabilities: AgentCapabilities) -> Self {
        pb::AgentCapabilities {
            streaming: capabilities.streaming,
            push_notifications: capabilities.push_notifications,
            extensions: capabilities
                .extensions
                .unwrap_or_default()
                .into_iter()
                .map(|e| pb::AgentExtension {
                    uri: e.uri,
                    description: e.description.unwrap_or_default(),
                    required: e.required,
                    params: to_metadata(e.params.as_ref()),
                })
                .collect(),
            extended_agent_card: capabilities.extended_agent_card,
        }
    }
}

impl From<pb::AgentCapabilities> for AgentCapabilities {
    fn from(capabilities: pb::AgentCapabilities) -> Self {
        let mut out = AgentCapabilities::default();
        out.streaming = capabilities.streaming;
        out.push_notifications = capabilities.push_notifications;
        out.extended_agent_card = capabilities.extended_agent_card;
        out.extensions = super::some_list(
            capabilities
                .extensions
                .into_iter()
                .map(|e| AgentExtension {
                    uri: e.uri,
                    description: some(e.description),
                    required: e.required,
                    params: from_metadata(e.params),
                })
                .collect(),
        );
        out
    }
}

impl From<AgentSkill> for pb::AgentSkill {
    fn from(skill: AgentSkill) -> Self {
        pb::AgentSkill {
            id: skill.id,
            name: skill.name,
            description: skill.description,
            tags: skill.tags,
            examples: skill.examples,
            input_modes: skill.input_modes,
            output_modes: skill.output_modes,
            security_requirements: requirements_to(skill.security_requirements),
        }
    }
}

impl From<pb::AgentSkill> for AgentSkill {
    fn from(skill: pb::AgentSkill) -> Self {
        AgentSkill {
            id: skill.id,
            name: skill.name,
            description: skill.description,
            tags: skill.tags,
            examples: skill.examples,
            input_modes: skill.input_modes,
            output_modes: skill.output_modes,
            security_requirements: requirements_from(skill.security_requirements),
        }
    }
}

fn requirements_to(requirements: Vec<SecurityRequirement>) -> Vec<pb::SecurityRequirement> {
    requirements
        .into_iter()
        .map(|r| pb::SecurityRequirement {
            schemes: r
                .schemes
                .into_iter()
                .map(|(name, scopes)| (name, pb::StringList { list: scopes.list }))
                .collect(),
        })
        .collect()
}

fn requirements_from(requirements: Vec<pb::SecurityRequirement>) -> Vec<SecurityRequirement> {
    requirements
        .into_iter()
        .map(|r| SecurityRequirement {
            schemes: r
                .schemes
                .into_iter()
                .map(|(name, scopes)| (name, StringList { list: scopes.list }))
                .collect(),
        })
        .collect()
}

impl From<SecurityScheme> for pb::SecurityScheme {
    fn from(scheme: SecurityScheme) -> Self {
        use pb::security_scheme::Scheme;
        let scheme = match scheme {
            SecurityScheme::ApiKey(s) => Scheme::ApiKeySecurityScheme(pb::ApiKeySecurityScheme {
                description: s.description.unwrap_or_default(),
                location: s.location,
                name: s.name,
            }),
            SecurityScheme::HttpAuth(s) => {
                Scheme::HttpAuthSecurityScheme(pb::HttpAuthSecurityScheme {
                    description: s.description.unwrap_or_default(),
                    scheme: s.scheme,
                    bearer_format: s.bearer_format.unwrap_or_default(),
                })
            }
            SecurityScheme::OAuth2(s) => Scheme::Oauth2SecurityScheme(pb::OAuth2SecurityScheme {
                description: s.description.unwrap_or_default(),
                flows: Some(s.flows.into()),
                oauth2_metadata_url: s.oauth2_metadata_url.unwrap_or_default(),
            }),
            SecurityScheme::OpenIdConnect(s) => {
                Scheme::OpenIdConnectSecurityScheme(pb::OpenIdConnectSecurityScheme {
                    description: s.description.unwrap_or_default(),
                    open_id_connect_url: s.open_id_connect_url,
                })
            }
            SecurityScheme::MutualTls(s) => {
                Scheme::MtlsSecurityScheme(pb::MutualTlsSecurityScheme {
                    description: s.description.unwrap_or_default(),
                })
            }
        };
        pb::SecurityScheme {
            scheme: Some(scheme),
        }
    }
}

impl TryFrom<pb::SecurityScheme> for SecurityScheme {
    type Error = ProtoError;

    fn try_from(scheme: pb::SecurityScheme) -> Result<Self, ProtoError> {
        use pb::security_scheme::Scheme;
        Ok(match required(scheme.scheme, "SecurityScheme.scheme")? {
            Scheme::ApiKeySecurityScheme(s) => SecurityScheme::ApiKey(ApiKeySecurityScheme {
                description: some(s.description),
                location: s.location,
                name: s.name,
            }),
            Scheme::HttpAuthSecurityScheme(s) => SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                description: some(s.description),
                scheme: s.scheme,
                bearer_format: some(s.bearer_format),
            }),
            Scheme::Oauth2SecurityScheme(s) => SecurityScheme::OAuth2(OAuth2SecurityScheme {
                description: some(s.description),
                flows: required(s.flows, "OAuth2SecurityScheme.flows")?.try_into()?,
                oauth2_metadata_url: some(s.oauth2_metadata_url),
            }),
            Scheme::OpenIdConnectSecurityScheme(s) => {
                SecurityScheme::OpenIdConnect(OpenIdConnectSecurityScheme {
                    description: some(s.description),
                    open_id_connect_url: s.open_id_connect_url,
                })
            }
            Scheme::MtlsSecurityScheme(s) => SecurityScheme::MutualTls(MutualTlsSecurityScheme {
                description: some(s.description),
            }),
        })
    }
}

// The proto deprecates the implicit and password flows; cards may still describe them.
#[allow(deprecated)]
impl From<OAuthFlows> for pb::OAuthFlows {
    fn from(flows: OAuthFlows) -> Self {
        use pb::o_auth_flows::Flow;
        let flow = match flows {
            OAuthFlows::AuthorizationCode(f) => {
                Flow::AuthorizationCode(pb::AuthorizationCodeOAuthFlow {
                    authorization_url: f.authorization_url,
                    token_url: f.token_url,
                    refresh_url: f.refresh_url.unwrap_or_default(),
                    scopes: f.scopes.into_iter().collect(),
                    pkce_required: f.pkce_required,
                })
            }
            OAuthFlows::ClientCredentials(f) => {
                Flow::ClientCredentials(pb::ClientCredentialsOAuthFlow {
                    token_url: f.token_url,
                    refresh_url: f.refresh_url.unwrap_or_default(),
                    scopes: f.scopes.into_iter().collect(),
                })
            }
            OAuthFlows::Implicit(f) => Flow::Implicit(pb::ImplicitOAuthFlow {
                authorization_url: f.authorization_url.unwrap_or_default(),
                refresh_url: f.refresh_url.unwrap_or_default(),
                scopes: f.scopes.into_iter().collect(),
            }),
            OAuthFlows::Password(f) => Flow::Password(pb::PasswordOAuthFlow {
                token_url: f.token_url.unwrap_or_default(),
                refresh_url: f.refresh_url.unwrap_or_default(),
                scopes: f.scopes.into_iter().collect(),
            }),
            OAuthFlows::DeviceCode(f) => Flow::DeviceCode(pb::DeviceCodeOAuthFlow {
                device_authorization_url: f.device_authorization_url,
                token_url: f.token_url,
                refresh_url: f.refresh_url.unwrap_or_default(),
                scopes: f.scopes.into_iter().collect(),
            }),
        };
        pb::OAuthFlows { flow: Some(flow) }
    }
}

#[allow(deprecated)]
impl TryFrom<pb::OAuthFlows> for OAuthFlows {
    type Error = ProtoError;

    fn try_from(flows: pb::OAuthFlows) -> Result<Self, ProtoError> {
        use pb::o_auth_flows::Flow;
        Ok(match required(flows.flow, "OAuthFlows.flow")? {
            Flow::AuthorizationCode(f) => {
                OAuthFlows::AuthorizationCode(AuthorizationCodeOAuthFlow {
                    authorization_url: f.authorization_url,
                    token_url: f.token_url,
                    refresh_url: some(f.refresh_url),
                    scopes: f.scopes.into_iter().collect(),
                    pkce_required: f.pkce_required,
                })
            }
            Flow::ClientCredentials(f) => {
                OAuthFlows::ClientCredentials(ClientCredentialsOAuthFlow {
                    token_url: f.token_url,
                    refresh_url: some(f.refresh_url),
                    scopes: f.scopes.into_iter().collect(),
                })
            }
            Flow::Implicit(f) => OAuthFlows::Implicit(ImplicitOAuthFlow {
                authorization_url: some(f.authorization_url),
                refresh_url: some(f.refresh_url),
                scopes: f.scopes.into_iter().collect(),
            }),
            Flow::Password(f) => OAuthFlows::Password(PasswordOAuthFlow {
                token_url: some(f.token_url),
                refresh_url: some(f.refresh_url),
                scopes: f.scopes.into_iter().collect(),
            }),
            Flow::DeviceCode(f) => OAuthFlows::DeviceCode(DeviceCodeOAuthFlow {
                device_authorization_url: f.device_authorization_url,
                token_url: f.token_url,
                refresh_url: some(f.refresh_url),
                scopes: f.scopes.into_iter().collect(),
            }),
        })
    }
}
