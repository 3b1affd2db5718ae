//! The code blocks of `idempotent-sends.md` (the user's document), unchanged, as tests.

#[test]
fn attaching_a_key() {
    use a2a_protocol_types::idempotency::{IDEMPOTENCY_EXTENSION_URI, key_of, set_key};
    use a2a_protocol_types::message::{Message, MessageId, MessageRole, Part};

    let mut message = Message {
        id: MessageId::new("msg-1"),
        role: MessageRole::User,
        parts: vec![Part::text("summarise the incident")],
        context_id: None,
        task_id: None,
        reference_task_ids: None,
        extensions: None,
        metadata: None,
    };

    set_key(&mut message, "8f14e45fceea167a5a36dedd4bea2543").expect("a valid key");

    // The key travels in `metadata`; `extensions` declares the URI alongside it.
    assert_eq!(
        key_of(&message).expect("a well-formed key"),
        Some("8f14e45fceea167a5a36dedd4bea2543"),
    );
    assert!(
        message
            .extensions
            .as_ref()
            .expect("set_key declares the extension")
            .iter()
            .any(|uri| uri == IDEMPOTENCY_EXTENSION_URI)
    );
}

#[test]
fn choosing_a_key() {
    use a2a_protocol_types::idempotency::{KeyError, MAX_KEY_LEN, MIN_KEY_LEN, validate_key};

    // Long enough to be a key rather than a counter or a word.
    assert_eq!(validate_key("retry"), Err(KeyError::TooShort));
    assert!(validate_key(&"a".repeat(MIN_KEY_LEN)).is_ok());
    assert_eq!(
        validate_key(&"a".repeat(MAX_KEY_LEN + 1)),
        Err(KeyError::TooLong)
    );

    // ASCII alphanumerics and `-`, `_`, `.`, `:` only. A key reaches store keys
    // and log lines, and a newline in either is where log injection starts.
    assert_eq!(
        validate_key("aaaaaaaaaaaaaaaa\n"),
        Err(KeyError::InvalidCharacter),
    );
    assert!(validate_key("tenant-a:8f14e45fceea167a").is_ok());
}

#[test]
fn knowing_whether_a_server_honours_it() {
    use a2a_protocol_types::agent_card::AgentCapabilities;
    use a2a_protocol_types::extensions::AgentExtension;
    use a2a_protocol_types::idempotency::IDEMPOTENCY_EXTENSION_URI;

    let mut capabilities = AgentCapabilities::none();
    capabilities.extensions = Some(vec![AgentExtension::new(IDEMPOTENCY_EXTENSION_URI)]);

    let honours_keys = capabilities
        .extensions
        .as_ref()
        .is_some_and(|exts| exts.iter().any(|e| e.uri == IDEMPOTENCY_EXTENSION_URI));
    assert!(honours_keys);
}

/// The wire shape the document shows under "Attaching a key".
#[test]
fn the_key_travels_as_the_document_shows() {
    use a2a_protocol_types::idempotency::set_key;
    use a2a_protocol_types::message::Message;

    let mut message = Message::user_text("summarise the incident");
    set_key(&mut message, "8f14e45fceea167a5a36dedd4bea2543").expect("a valid key");
    let wire = serde_json::to_value(&message).expect("serializes");
    assert_eq!(
        wire["extensions"],
        serde_json::json!(["https://a2a-rust.com/extensions/idempotency/v1"])
    );
    assert_eq!(
        wire["metadata"],
        serde_json::json!({ "a2a-rust.com/idempotency-key": "8f14e45fceea167a5a36dedd4bea2543" })
    );
}
