//! Messages and their parts (spec §4.1.4–4.1.6).

use base64::Engine as _;
use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::Metadata;
use crate::proto_enum::proto_enum;
use crate::serde_util;

pub use crate::ids::{ContextId, MessageId, TaskId};

proto_enum! {
    /// Who sent a message (proto `Role`).
    ///
    /// ```
    /// use a2a_protocol_types::MessageRole;
    ///
    /// assert_eq!(serde_json::to_value(MessageRole::User).unwrap(), "ROLE_USER");
    /// let legacy: MessageRole = serde_json::from_str(r#""agent""#).unwrap();
    /// assert_eq!(legacy, MessageRole::Agent, "v0.3 spellings are read too");
    /// ```
    pub enum MessageRole {
        /// Not set; invalid on a message that is sent.
        Unspecified = ("ROLE_UNSPECIFIED", 0),
        /// The client, or an agent acting as one.
        User = ("ROLE_USER", 1, "user"),
        /// The agent answering.
        Agent = ("ROLE_AGENT", 2, "agent"),
    }
}

/// The proto name of [`MessageRole`].
pub type Role = MessageRole;

/// One turn of communication between a client and an agent.
///
/// Optional fields are `None` when unset; empty strings and lists received from a peer are read
/// as unset, and unset fields are not written.
///
/// ```
/// use a2a_protocol_types::{Message, MessageRole};
///
/// let message: Message = serde_json::from_str(
///     r#"{"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}], "contextId": ""}"#,
/// )
/// .unwrap();
/// assert_eq!(message.role, MessageRole::User);
/// assert_eq!(message.context_id, None, "an empty string reads as unset");
/// assert_eq!(message.text(), "hello");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Unique per message, chosen by the sender.
    #[serde(
        rename = "messageId",
        alias = "message_id",
        default,
        deserialize_with = "serde_util::nullable"
    )]
    #[serde(skip_serializing_if = "MessageId::is_empty")]
    pub id: MessageId,
    /// Who sent it.
    pub role: MessageRole,
    /// The content; at least one part.
    #[serde(default, deserialize_with = "serde_util::nullable")]
    pub parts: Vec<Part>,
    /// The conversation this message belongs to.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "context_id")]
    pub context_id: Option<ContextId>,
    /// The task this message continues, for a follow-up.
    #[serde(default, deserialize_with = "serde_util::non_empty_string")]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_id")]
    pub task_id: Option<TaskId>,
    /// Other tasks this message refers to, as context.
    #[serde(default, deserialize_with = "serde_util::non_empty_vec")]
    #[serde(skip_serializing_if = "serde_util::is_none_or_empty")]
    #[serde(alias = "reference_task_ids")]
    pub reference_task_ids: Option<Vec<TaskId>>,
    /// URIs of the extensions whose data this message carries.
    #[serde(default, deserialize_with = "serde_util::non_empty_vec")]
    #[serde(skip_serializing_if = "serde_util::is_none_or_empty")]
    pub extensions: Option<Vec<String>>,
    /// Free-form data; extensions keep their values here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Message {
    /// A message from `role` with the given parts, a random id, and nothing else set.
    ///
    /// ```
    /// use a2a_protocol_types::{Message, MessageRole, Part};
    ///
    /// let message = Message::new(MessageRole::User, vec![Part::text("a"), Part::url("https://x.example/f")]);
    /// assert_eq!(message.parts.len(), 2);
    /// assert!(!message.id.is_empty(), "a random id");
    /// ```
    pub fn new(role: MessageRole, parts: Vec<Part>) -> Self {
        Self {
            id: MessageId::random(),
            role,
            parts,
            context_id: None,
            task_id: None,
            reference_task_ids: None,
            extensions: None,
            metadata: None,
        }
    }

    /// A user message holding one text part.
    ///
    /// ```
    /// use a2a_protocol_types::{Message, MessageRole};
    ///
    /// let message = Message::user_text("summarise the incident");
    /// assert_eq!((message.role, message.text().as_str()), (MessageRole::User, "summarise the incident"));
    /// ```
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(MessageRole::User, vec![Part::text(text)])
    }

    /// An agent message holding one text part.
    ///
    /// ```
    /// use a2a_protocol_types::{Message, MessageRole};
    ///
    /// assert_eq!(Message::agent_text("done").role, MessageRole::Agent);
    /// ```
    pub fn agent_text(text: impl Into<String>) -> Self {
        Self::new(MessageRole::Agent, vec![Part::text(text)])
    }

    /// Sets the context id.
    ///
    /// ```
    /// use a2a_protocol_types::{ContextId, Message};
    ///
    /// let message = Message::user_text("more").with_context_id("ctx-1");
    /// assert_eq!(message.context_id, Some(ContextId::new("ctx-1")));
    /// ```
    pub fn with_context_id(mut self, context_id: impl Into<ContextId>) -> Self {
        self.context_id = Some(context_id.into());
        self
    }

    /// Sets the task id (a follow-up to that task).
    ///
    /// ```
    /// use a2a_protocol_types::{Message, TaskId};
    ///
    /// let follow_up = Message::user_text("yes, go ahead").with_task_id("t-1");
    /// assert_eq!(follow_up.task_id, Some(TaskId::new("t-1")));
    /// ```
    pub fn with_task_id(mut self, task_id: impl Into<TaskId>) -> Self {
        self.task_id = Some(task_id.into());
        self
    }

    /// The concatenated text of every text part, joined by newlines.
    ///
    /// ```
    /// use a2a_protocol_types::{Message, MessageRole, Part};
    ///
    /// let message = Message::new(MessageRole::User, vec![Part::text("one"), Part::raw(vec![1]), Part::text("two")]);
    /// assert_eq!(message.text(), "one\ntwo");
    /// ```
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self.parts.iter().filter_map(Part::as_text).collect();
        texts.join("\n")
    }

    /// Whether `uri` is among the declared extensions.
    ///
    /// ```
    /// use a2a_protocol_types::Message;
    ///
    /// let mut message = Message::user_text("hi");
    /// assert!(!message.declares("https://example.com/ext/v1"));
    /// message.declare_extension("https://example.com/ext/v1");
    /// assert!(message.declares("https://example.com/ext/v1"));
    /// ```
    pub fn declares(&self, uri: &str) -> bool {
        self.extensions
            .as_ref()
            .is_some_and(|exts| exts.iter().any(|e| e == uri))
    }

    /// Declares `uri` in `extensions`, once.
    ///
    /// ```
    /// use a2a_protocol_types::Message;
    ///
    /// let mut message = Message::user_text("hi");
    /// message.declare_extension("https://example.com/ext/v1");
    /// message.declare_extension("https://example.com/ext/v1");
    /// assert_eq!(message.extensions.unwrap().len(), 1, "declared once");
    /// ```
    pub fn declare_extension(&mut self, uri: &str) {
        if !self.declares(uri) {
            self.extensions
                .get_or_insert_with(Vec::new)
                .push(uri.to_owned());
        }
    }
}

/// The content of a [`Part`]: exactly one of text, raw bytes, a URL, or structured data.
///
/// ```
/// use a2a_protocol_types::{Part, PartContent};
///
/// let part: Part = serde_json::from_str(r#"{"raw": "aGVsbG8=", "mediaType": "text/plain"}"#).unwrap();
/// assert_eq!(part.content, PartContent::Raw(b"hello".to_vec()));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    /// Plain text.
    Text(String),
    /// File content inline; base64 on the wire.
    Raw(Vec<u8>),
    /// A URL the content can be fetched from.
    Url(String),
    /// Arbitrary JSON.
    Data(Value),
}

/// A piece of content in a message or artifact (spec §4.1.6).
///
/// ```
/// use a2a_protocol_types::Part;
///
/// let part = Part::url("https://files.example/report.pdf")
///     .with_media_type("application/pdf")
///     .with_filename("report.pdf");
/// let json = serde_json::to_value(&part).unwrap();
/// assert_eq!(json["url"], "https://files.example/report.pdf");
/// assert_eq!(json["mediaType"], "application/pdf");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// What the part holds.
    pub content: PartContent,
    /// Free-form data about this part.
    pub metadata: Option<Metadata>,
    /// A file name, for file content.
    pub filename: Option<String>,
    /// The media type, such as `text/plain` or `image/png`.
    pub media_type: Option<String>,
}

impl Part {
    fn of(content: PartContent) -> Self {
        Self {
            content,
            metadata: None,
            filename: None,
            media_type: None,
        }
    }

    /// A text part.
    ///
    /// ```
    /// use a2a_protocol_types::Part;
    ///
    /// assert_eq!(serde_json::to_string(&Part::text("hi")).unwrap(), r#"{"text":"hi"}"#);
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self::of(PartContent::Text(text.into()))
    }

    /// Inline file bytes.
    ///
    /// ```
    /// use a2a_protocol_types::Part;
    ///
    /// assert_eq!(serde_json::to_value(Part::raw(b"hello".to_vec())).unwrap()["raw"], "aGVsbG8=");
    /// ```
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Self::of(PartContent::Raw(bytes.into()))
    }

    /// A file by reference.
    ///
    /// ```
    /// use a2a_protocol_types::Part;
    ///
    /// assert_eq!(serde_json::to_value(Part::url("https://x.example")).unwrap()["url"], "https://x.example");
    /// ```
    pub fn url(url: impl Into<String>) -> Self {
        Self::of(PartContent::Url(url.into()))
    }

    /// Structured JSON data.
    ///
    /// ```
    /// use a2a_protocol_types::Part;
    ///
    /// let part = Part::data(serde_json::json!({"rows": 3}));
    /// assert_eq!(serde_json::to_value(part).unwrap()["data"]["rows"], 3);
    /// ```
    pub fn data(data: Value) -> Self {
        Self::of(PartContent::Data(data))
    }

    /// Sets the media type.
    ///
    /// ```
    /// use a2a_protocol_types::Part;
    ///
    /// assert_eq!(Part::raw(vec![0]).with_media_type("image/png").media_type.as_deref(), Some("image/png"));
    /// ```
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = Some(media_type.into());
        self
    }

    /// Sets the file name.
    ///
    /// ```
    /// use a2a_protocol_types::Part;
    ///
    /// assert_eq!(Part::raw(vec![0]).with_filename("a.bin").filename.as_deref(), Some("a.bin"));
    /// ```
    pub fn with_filename(mut self, filename: impl Into<String>) -> Self {
        self.filename = Some(filename.into());
        self
    }

    /// Sets the metadata.
    ///
    /// ```
    /// use a2a_protocol_types::{Metadata, Part};
    ///
    /// let mut metadata = Metadata::new();
    /// metadata.insert("lang".into(), "en".into());
    /// assert_eq!(Part::text("hi").with_metadata(metadata).metadata.unwrap()["lang"], "en");
    /// ```
    pub fn with_metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The text, if this is a text part.
    ///
    /// ```
    /// use a2a_protocol_types::Part;
    ///
    /// assert_eq!(Part::text("hi").as_text(), Some("hi"));
    /// assert_eq!(Part::raw(vec![1]).as_text(), None);
    /// ```
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(text) => Some(text),
            _ => None,
        }
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match &self.content {
            PartContent::Text(text) => map.serialize_entry("text", text)?,
            PartContent::Raw(bytes) => map.serialize_entry(
                "raw",
                &base64::engine::general_purpose::STANDARD.encode(bytes),
            )?,
            PartContent::Url(url) => map.serialize_entry("url", url)?,
            PartContent::Data(data) => map.serialize_entry("data", data)?,
        }
        if let Some(metadata) = &self.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        if let Some(filename) = self.filename.as_deref().filter(|s| !s.is_empty()) {
            map.serialize_entry("filename", filename)?;
        }
        if let Some(media_type) = self.media_type.as_deref().filter(|s| !s.is_empty()) {
            map.serialize_entry("mediaType", media_type)?;
        }
        map.end()
    }
}

/// The wire shape of a part, with every member optional, so one pass can check the oneof.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    #[serde(alias = "media_type")]
    media_type: Option<String>,
    /// A2A v0.3 file parts: `{"kind": "file", "file": {...}}`.
    #[serde(default)]
    file: Option<LegacyFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LegacyFile {
    #[serde(default)]
    bytes: Option<String>,
    #[serde(default)]
    #[serde(alias = "file_with_bytes")]
    file_with_bytes: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default)]
    #[serde(alias = "file_with_uri")]
    file_with_uri: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    #[serde(alias = "mime_type")]
    mime_type: Option<String>,
}

/// Decodes base64 as ProtoJSON writers produce it: standard or URL-safe, padded or not.
pub(crate) fn decode_base64(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let trimmed = text.trim_end_matches('=');
    STANDARD
        .decode(text)
        .or_else(|_| STANDARD_NO_PAD.decode(trimmed))
        .or_else(|_| URL_SAFE.decode(text))
        .or_else(|_| URL_SAFE_NO_PAD.decode(trimmed))
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut wire = WirePart::deserialize(deserializer)?;
        if let Some(file) = wire.file.take() {
            wire.raw = wire.raw.or(file.bytes).or(file.file_with_bytes);
            wire.url = wire.url.or(file.uri).or(file.file_with_uri);
            wire.filename = wire.filename.or(file.name);
            wire.media_type = wire.media_type.or(file.mime_type);
        }
        let mut contents = Vec::with_capacity(1);
        if let Some(text) = wire.text {
            contents.push(PartContent::Text(text));
        }
        if let Some(raw) = wire.raw {
            let bytes = decode_base64(&raw)
                .map_err(|e| D::Error::custom(format!("part.raw is not valid base64: {e}")))?;
            contents.push(PartContent::Raw(bytes));
        }
        if let Some(url) = wire.url {
            contents.push(PartContent::Url(url));
        }
        if let Some(data) = wire.data {
            contents.push(PartContent::Data(data));
        }
        if contents.len() != 1 {
            return Err(D::Error::custom(
                "a part must hold exactly one of `text`, `raw`, `url` or `data`",
            ));
        }
        let content = contents
            .pop()
            .ok_or_else(|| D::Error::custom("empty part"))?;
        Ok(Part {
            content,
            metadata: wire.metadata,
            filename: wire.filename.filter(|s| !s.is_empty()),
            media_type: wire.media_type.filter(|s| !s.is_empty()),
        })
    }
}
