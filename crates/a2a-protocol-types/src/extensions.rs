//! Protocol extensions (spec §4.6): how a card declares one, how a request activates one
//! (the `A2A-Extensions` service parameter), and the metadata slot an extension's data rides in.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Metadata;
use crate::message::Message;
use crate::serde_util;

/// The HTTP header that carries the extensions a request activates (and a response activated).
pub const EXTENSIONS_HEADER: &str = "A2A-Extensions";

/// An extension an agent supports, as listed in `capabilities.extensions`.
///
/// ```
/// use a2a_protocol_types::AgentExtension;
///
/// let extension = AgentExtension::new("https://example.com/ext/v1").with_description("An example.");
/// let json = serde_json::to_value(&extension).unwrap();
/// assert_eq!(json["uri"], "https://example.com/ext/v1");
/// assert_eq!(json["required"], false, "always written");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    /// The extension's identifying URI.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub uri: String,
    /// How the agent uses it.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether a client must activate it to talk to the agent. Always written.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub required: bool,
    /// Extension-specific configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Metadata>,
}

impl AgentExtension {
    /// An optional extension with no description or parameters.
    ///
    /// ```
    /// use a2a_protocol_types::AgentExtension;
    ///
    /// let extension = AgentExtension::new("https://example.com/ext/v1");
    /// assert!(!extension.required && extension.description.is_none());
    /// ```
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            description: None,
            required: false,
            params: None,
        }
    }

    /// Sets the description.
    ///
    /// ```
    /// use a2a_protocol_types::AgentExtension;
    ///
    /// let extension = AgentExtension::new("https://example.com/ext/v1").with_description("Keys.");
    /// assert_eq!(extension.description.as_deref(), Some("Keys."));
    /// ```
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Marks the extension as required.
    ///
    /// ```
    /// use a2a_protocol_types::AgentExtension;
    ///
    /// assert!(AgentExtension::new("https://example.com/ext/v1").with_required(true).required);
    /// ```
    pub fn with_required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Sets the parameters.
    ///
    /// ```
    /// use a2a_protocol_types::{AgentExtension, Metadata};
    ///
    /// let mut params = Metadata::new();
    /// params.insert("maxTtlMs".into(), 60_000.into());
    /// let extension = AgentExtension::new("https://example.com/ext/v1").with_params(params);
    /// assert_eq!(extension.params.unwrap()["maxTtlMs"], 60_000);
    /// ```
    pub fn with_params(mut self, params: Metadata) -> Self {
        self.params = Some(params);
        self
    }
}

/// Splits an `A2A-Extensions` header value into URIs (comma-separated, blanks dropped).
///
/// ```
/// use a2a_protocol_types::extensions::parse_extensions_header;
///
/// assert_eq!(
///     parse_extensions_header(" https://a.example/x/v1, https://b.example/y/v1 ,,"),
///     ["https://a.example/x/v1", "https://b.example/y/v1"],
/// );
/// ```
pub fn parse_extensions_header(value: &str) -> Vec<String> {
    let mut uris: Vec<String> = Vec::new();
    for uri in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !uris.iter().any(|u| u == uri) {
            uris.push(uri.to_owned());
        }
    }
    uris
}

/// Joins URIs into an `A2A-Extensions` header value.
///
/// ```
/// use a2a_protocol_types::extensions::format_extensions_header;
///
/// assert_eq!(
///     format_extensions_header(&["https://a.example/x/v1", "https://b.example/y/v1"]),
///     "https://a.example/x/v1,https://b.example/y/v1",
/// );
/// ```
pub fn format_extensions_header<S: AsRef<str>>(uris: &[S]) -> String {
    uris.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(",")
}

/// The value stored under `key` in a message's metadata, if any.
pub(crate) fn metadata_value<'a>(message: &'a Message, key: &str) -> Option<&'a Value> {
    message.metadata.as_ref().and_then(|m| m.get(key))
}

/// Stores `value` under `key` in the message's metadata and declares `uri` once.
pub(crate) fn attach(message: &mut Message, uri: &str, key: &str, value: Value) {
    message
        .metadata
        .get_or_insert_with(Metadata::new)
        .insert(key.to_owned(), value);
    message.declare_extension(uri);
}
