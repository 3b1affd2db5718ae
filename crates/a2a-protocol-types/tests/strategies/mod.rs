//! Strategies for the wire model, shared by the property tests of this crate and of the gRPC
//! crate (which includes this file by path). The includer defines `json_int()`: the integers
//! free-form JSON may hold, which differ because protobuf's `Struct` carries doubles.
#![allow(dead_code)]

use std::collections::BTreeMap;

use a2a_protocol_types::agent_card::{AgentCardSignature, AgentProvider};
use a2a_protocol_types::security::{
    ApiKeySecurityScheme, AuthorizationCodeOAuthFlow, ClientCredentialsOAuthFlow,
    DeviceCodeOAuthFlow, HttpAuthSecurityScheme, ImplicitOAuthFlow, MutualTlsSecurityScheme,
    OAuth2SecurityScheme, OAuthFlows, OpenIdConnectSecurityScheme, PasswordOAuthFlow,
    SecurityRequirement, SecurityScheme, StringList,
};
use a2a_protocol_types::*;
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use serde_json::{Map, Value};

pub fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 _./:-]{0,24}"
}

pub fn non_empty_text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 _./:\u{e9}\u{1f600}-]{1,24}"
}

pub fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        super::json_int().prop_map(Value::from),
        text().prop_map(Value::String),
    ]
}

pub fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map(non_empty_text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

pub fn metadata() -> impl Strategy<Value = Option<Metadata>> {
    option::of(
        btree_map(non_empty_text(), json_value(), 0..4)
            .prop_map(|m| m.into_iter().collect::<Map<String, Value>>()),
    )
}

pub fn timestamp() -> impl Strategy<Value = Timestamp> {
    (0i64..4_102_444_800_000).prop_map(|ms| Timestamp::from_unix_millis(ms).expect("in range"))
}

pub fn part() -> impl Strategy<Value = Part> {
    let content = prop_oneof![
        text().prop_map(PartContent::Text),
        vec(any::<u8>(), 0..48).prop_map(PartContent::Raw),
        non_empty_text().prop_map(PartContent::Url),
        json_value()
            .prop_filter("null data reads as unset", |v| !v.is_null())
            .prop_map(PartContent::Data),
    ];
    (
        content,
        metadata(),
        option::of(non_empty_text()),
        option::of(non_empty_text()),
    )
        .prop_map(|(content, metadata, filename, media_type)| Part {
            content,
            metadata,
            filename,
            media_type,
        })
}

pub fn role() -> impl Strategy<Value = MessageRole> {
    prop_oneof![Just(MessageRole::User), Just(MessageRole::Agent)]
}

pub fn non_empty_list<T: std::fmt::Debug>(
    item: impl Strategy<Value = T>,
) -> impl Strategy<Value = Option<Vec<T>>> {
    option::of(vec(item, 1..4))
}

pub fn message() -> impl Strategy<Value = Message> {
    (
        text(),
        role(),
        vec(part(), 0..4),
        option::of(non_empty_text()),
        option::of(non_empty_text()),
        non_empty_list(non_empty_text()),
        non_empty_list(non_empty_text()),
        metadata(),
    )
        .prop_map(
            |(id, role, parts, context_id, task_id, references, extensions, metadata)| Message {
                id: MessageId::new(id),
                role,
                parts,
                context_id: context_id.map(ContextId::new),
                task_id: task_id.map(TaskId::new),
                reference_task_ids: references.map(|r| r.into_iter().map(TaskId::new).collect()),
                extensions,
                metadata,
            },
        )
}

pub fn state() -> impl Strategy<Value = TaskState> {
    proptest::sample::select(TaskState::ALL.to_vec())
}

pub fn status() -> impl Strategy<Value = TaskStatus> {
    (state(), option::of(message()), option::of(timestamp())).prop_map(
        |(state, message, timestamp)| TaskStatus {
            state,
            message,
            timestamp,
        },
    )
}

pub fn artifact() -> impl Strategy<Value = Artifact> {
    (
        text(),
        option::of(non_empty_text()),
        option::of(non_empty_text()),
        vec(part(), 0..3),
        metadata(),
        vec(non_empty_text(), 0..3),
    )
        .prop_map(
            |(id, name, description, parts, metadata, extensions)| Artifact {
                artifact_id: ArtifactId::new(id),
                name,
                description,
                parts,
                metadata,
                extensions,
            },
        )
}

pub fn task() -> impl Strategy<Value = Task> {
    (
        non_empty_text(),
        text(),
        status(),
        vec(artifact(), 0..3),
        vec(message(), 0..3),
        metadata(),
        any::<u64>(),
    )
        .prop_map(
            |(id, context_id, status, artifacts, history, metadata, generation)| Task {
                id: TaskId::new(id),
                context_id: ContextId::new(context_id),
                status,
                artifacts,
                history,
                metadata,
                generation,
            },
        )
}

pub fn stream_response() -> impl Strategy<Value = StreamResponse> {
    prop_oneof![
        task().prop_map(StreamResponse::Task),
        message().prop_map(StreamResponse::Message),
        (text(), text(), status(), metadata(), any::<u64>()).prop_map(
            |(t, c, status, metadata, generation)| {
                StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                    task_id: TaskId::new(t),
                    context_id: ContextId::new(c),
                    status,
                    metadata,
                    generation,
                })
            }
        ),
        (
            text(),
            text(),
            artifact(),
            any::<bool>(),
            any::<bool>(),
            metadata(),
            any::<u64>(),
        )
            .prop_map(
                |(t, c, artifact, append, last_chunk, metadata, generation)| {
                    StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                        task_id: TaskId::new(t),
                        context_id: ContextId::new(c),
                        artifact,
                        append,
                        last_chunk,
                        metadata,
                        generation,
                    })
                }
            ),
    ]
}

pub fn security_scheme() -> impl Strategy<Value = SecurityScheme> {
    prop_oneof![
        (option::of(non_empty_text()), text(), text()).prop_map(|(description, location, name)| {
            SecurityScheme::ApiKey(ApiKeySecurityScheme {
                description,
                location,
                name,
            })
        }),
        (text(), option::of(non_empty_text())).prop_map(|(scheme, bearer_format)| {
            SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                description: None,
                scheme,
                bearer_format,
            })
        }),
        (text(), btree_map(non_empty_text(), text(), 0..3)).prop_map(|(token_url, scopes)| {
            SecurityScheme::OAuth2(OAuth2SecurityScheme {
                description: None,
                flows: OAuthFlows::ClientCredentials(ClientCredentialsOAuthFlow {
                    token_url,
                    refresh_url: None,
                    scopes,
                }),
                oauth2_metadata_url: None,
            })
        }),
        text().prop_map(
            |url| SecurityScheme::OpenIdConnect(OpenIdConnectSecurityScheme {
                description: None,
                open_id_connect_url: url,
            })
        ),
        option::of(non_empty_text()).prop_map(|description| {
            SecurityScheme::MutualTls(MutualTlsSecurityScheme { description })
        }),
        (oauth_flows(), option::of(non_empty_text())).prop_map(|(flows, url)| {
            SecurityScheme::OAuth2(OAuth2SecurityScheme {
                description: Some("oauth".into()),
                flows,
                oauth2_metadata_url: url,
            })
        }),
    ]
}

pub fn scopes() -> impl Strategy<Value = BTreeMap<String, String>> {
    btree_map(non_empty_text(), text(), 0..3)
}

pub fn oauth_flows() -> impl Strategy<Value = OAuthFlows> {
    let url = || option::of(non_empty_text());
    prop_oneof![
        (text(), text(), url(), scopes(), any::<bool>()).prop_map(
            |(authorization_url, token_url, refresh_url, scopes, pkce_required)| {
                OAuthFlows::AuthorizationCode(AuthorizationCodeOAuthFlow {
                    authorization_url,
                    token_url,
                    refresh_url,
                    scopes,
                    pkce_required,
                })
            }
        ),
        (url(), url(), scopes()).prop_map(|(authorization_url, refresh_url, scopes)| {
            OAuthFlows::Implicit(ImplicitOAuthFlow {
                authorization_url,
                refresh_url,
                scopes,
            })
        }),
        (url(), url(), scopes()).prop_map(|(token_url, refresh_url, scopes)| {
            OAuthFlows::Password(PasswordOAuthFlow {
                token_url,
                refresh_url,
                scopes,
            })
        }),
        (text(), text(), url(), scopes()).prop_map(
            |(device_authorization_url, token_url, refresh_url, scopes)| {
                OAuthFlows::DeviceCode(DeviceCodeOAuthFlow {
                    device_authorization_url,
                    token_url,
                    refresh_url,
                    scopes,
                })
            }
        ),
    ]
}

pub fn requirement() -> impl Strategy<Value = SecurityRequirement> {
    btree_map(non_empty_text(), vec(non_empty_text(), 0..3), 1..3).prop_map(|schemes| {
        SecurityRequirement {
            schemes: schemes
                .into_iter()
                .map(|(k, list)| (k, StringList { list }))
                .collect::<BTreeMap<_, _>>(),
        }
    })
}

pub fn extension() -> impl Strategy<Value = AgentExtension> {
    (
        non_empty_text(),
        option::of(non_empty_text()),
        any::<bool>(),
        metadata(),
    )
        .prop_map(|(uri, description, required, params)| AgentExtension {
            uri,
            description,
            required,
            params,
        })
}

pub fn capabilities() -> impl Strategy<Value = AgentCapabilities> {
    (
        option::of(any::<bool>()),
        option::of(any::<bool>()),
        non_empty_list(extension()),
        option::of(any::<bool>()),
    )
        .prop_map(|(streaming, push, extensions, extended)| {
            let mut capabilities = AgentCapabilities::none();
            capabilities.streaming = streaming;
            capabilities.push_notifications = push;
            capabilities.extensions = extensions;
            capabilities.extended_agent_card = extended;
            capabilities
        })
}

pub fn skill() -> impl Strategy<Value = AgentSkill> {
    (
        text(),
        text(),
        text(),
        vec(text(), 0..3),
        vec(text(), 0..3),
        vec(requirement(), 0..2),
    )
        .prop_map(|(id, name, description, tags, examples, security)| {
            let mut skill = AgentSkill::new(id, name, description, tags);
            skill.examples = examples;
            skill.security_requirements = security;
            skill
        })
}

pub fn agent_card() -> impl Strategy<Value = AgentCard> {
    let interfaces = vec(
        (text(), text(), text(), text()).prop_map(|(url, binding, tenant, version)| {
            let mut interface = AgentInterface::new(url, binding).with_tenant(tenant);
            interface.protocol_version = version;
            interface
        }),
        0..3,
    );
    (
        (
            text(),
            text(),
            text(),
            interfaces,
            option::of((text(), text())),
        ),
        (
            option::of(text()),
            capabilities(),
            btree_map(non_empty_text(), security_scheme(), 0..3),
        ),
        (
            vec(requirement(), 0..2),
            vec(text(), 0..3),
            vec(text(), 0..3),
        ),
        (
            vec(skill(), 0..3),
            vec((text(), text(), metadata()), 0..2),
            option::of(text()),
        ),
    )
        .prop_map(
            |(
                (name, description, version, interfaces, provider),
                (documentation_url, capabilities, security_schemes),
                (security_requirements, inputs, outputs),
                (skills, signatures, icon_url),
            )| {
                let mut card = AgentCard::new(name, description, version);
                card.supported_interfaces = interfaces;
                card.provider =
                    provider.map(|(url, organization)| AgentProvider { url, organization });
                card.documentation_url = documentation_url;
                card.capabilities = capabilities;
                card.security_schemes = security_schemes;
                card.security_requirements = security_requirements;
                card.default_input_modes = inputs;
                card.default_output_modes = outputs;
                card.skills = skills;
                card.signatures = signatures
                    .into_iter()
                    .map(|(protected, signature, header)| AgentCardSignature {
                        protected,
                        signature,
                        header,
                    })
                    .collect();
                card.icon_url = icon_url;
                card
            },
        )
}
