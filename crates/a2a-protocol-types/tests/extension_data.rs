//! The idempotency, lease and budget helpers: what they accept, refuse, and write.

use std::time::Duration;

use a2a_protocol_types::budget::{
    BUDGET_EXTENSION_URI, BudgetError, BudgetGrant, MAX_METERS, budget_of, set_budget,
};
use a2a_protocol_types::idempotency::{
    IDEMPOTENCY_EXTENSION_URI, IDEMPOTENCY_METADATA_KEY, KeyError, declares_extension, key_of,
    set_key,
};
use a2a_protocol_types::lease::{LEASE_EXTENSION_URI, Lease, LeaseError, lease_of, set_lease};
use a2a_protocol_types::message::Message;
use serde_json::json;

const KEY: &str = "8f14e45fceea167a5a36dedd4bea2543";

fn with_metadata(key: &str, value: serde_json::Value) -> Message {
    let mut message = Message::user_text("hi");
    message.metadata = Some([(key.to_owned(), value)].into_iter().collect());
    message
}

#[test]
fn a_message_without_metadata_has_no_key() {
    assert_eq!(key_of(&Message::user_text("hi")), Ok(None));
}

#[test]
fn a_key_that_is_not_a_string_is_refused() {
    let message = with_metadata(IDEMPOTENCY_METADATA_KEY, json!(12345678901234567_u64));
    assert_eq!(key_of(&message), Err(KeyError::NotAString));
    let message = with_metadata(IDEMPOTENCY_METADATA_KEY, json!(null));
    assert_eq!(key_of(&message), Err(KeyError::NotAString));
}

#[test]
fn a_malformed_key_in_metadata_is_refused() {
    let message = with_metadata(IDEMPOTENCY_METADATA_KEY, json!("short"));
    assert_eq!(key_of(&message), Err(KeyError::TooShort));
}

#[test]
fn a_key_without_the_declared_uri_is_still_a_key() {
    let message = with_metadata(IDEMPOTENCY_METADATA_KEY, json!(KEY));
    assert_eq!(key_of(&message), Ok(Some(KEY)));
    assert!(!declares_extension(&message));
}

#[test]
fn set_key_declares_the_extension_once_and_replaces_the_key() {
    let mut message = Message::user_text("hi");
    set_key(&mut message, KEY).expect("valid");
    set_key(&mut message, "another-key-of-16-bytes").expect("valid");
    assert_eq!(key_of(&message), Ok(Some("another-key-of-16-bytes")));
    assert_eq!(
        message.extensions.as_deref(),
        Some(&[IDEMPOTENCY_EXTENSION_URI.to_owned()][..])
    );
    assert!(declares_extension(&message));
}

#[test]
fn set_key_with_an_invalid_key_changes_nothing() {
    let mut message = Message::user_text("hi");
    let before = message.clone();
    assert_eq!(
        set_key(&mut message, "bad key with spaces"),
        Err(KeyError::InvalidCharacter)
    );
    assert_eq!(message, before);
}

#[test]
fn key_errors_tell_the_user_what_to_do() {
    assert!(KeyError::TooShort.to_string().contains("at least 16 bytes"));
    assert!(KeyError::TooLong.to_string().contains("at most 255 bytes"));
    assert!(KeyError::InvalidCharacter.to_string().contains("hex"));
    assert!(KeyError::NotAString.to_string().contains("JSON string"));
}

#[test]
fn a_lease_travels_as_ttl_ms() {
    let mut message = Message::user_text("hi");
    set_lease(&mut message, Lease::new(Duration::from_secs(30))).expect("valid");
    let wire = serde_json::to_value(&message).expect("serializes");
    assert_eq!(
        wire["metadata"]["a2a-rust.com/lease"],
        json!({"ttlMs": 30000})
    );
    assert!(message.declares(LEASE_EXTENSION_URI));
    assert_eq!(lease_of(&message), Ok(Some(Lease { ttl_ms: 30_000 })));
}

#[test]
fn leases_below_a_second_or_malformed_are_refused() {
    let mut message = Message::user_text("hi");
    assert_eq!(
        set_lease(&mut message, Lease::new(Duration::from_millis(999))),
        Err(LeaseError::TooShort)
    );
    assert_eq!(message.metadata, None);
    for bad in [
        json!({"ttlMs": -1}),
        json!("30s"),
        json!({"ttl": 30000}),
        json!({"ttlMs": 1.5}),
    ] {
        let message = with_metadata("a2a-rust.com/lease", bad);
        assert_eq!(lease_of(&message), Err(LeaseError::Malformed));
    }
    let message = with_metadata("a2a-rust.com/lease", json!({"ttlMs": 10}));
    assert_eq!(lease_of(&message), Err(LeaseError::TooShort));
}

#[test]
fn a_budget_grant_travels_as_remaining_ms_and_meters() {
    let grant = BudgetGrant::with_time(Duration::from_secs(60)).with_meter("tokens", 5000);
    let mut message = Message::user_text("hi");
    set_budget(&mut message, &grant).expect("valid");
    let wire = serde_json::to_value(&message).expect("serializes");
    assert_eq!(
        wire["metadata"]["a2a-rust.com/budget"],
        json!({"remainingMs": 60000, "meters": {"tokens": 5000}})
    );
    assert!(message.declares(BUDGET_EXTENSION_URI));
    assert_eq!(budget_of(&message), Ok(Some(grant)));
}

#[test]
fn a_grant_without_time_is_unlimited_in_time() {
    let message = with_metadata("a2a-rust.com/budget", json!({"meters": {"calls": 3}}));
    let grant = budget_of(&message).expect("valid").expect("present");
    assert_eq!(grant.remaining(), None);
    assert_eq!(grant.meters["calls"], 3);
}

#[test]
fn budgets_with_too_many_or_badly_named_meters_are_refused() {
    let mut grant = BudgetGrant::default();
    for i in 0..=MAX_METERS {
        grant = grant.with_meter(format!("m{i}"), 1);
    }
    assert_eq!(grant.validate(), Err(BudgetError::TooManyMeters));
    let long = BudgetGrant::default().with_meter("x".repeat(65), 1);
    assert_eq!(long.validate(), Err(BudgetError::MeterNameTooLong));
    assert!(
        BudgetGrant::default()
            .with_meter("x".repeat(64), 1)
            .validate()
            .is_ok()
    );
    let empty = BudgetGrant::default().with_meter("", 1);
    assert_eq!(empty.validate(), Err(BudgetError::EmptyMeterName));
    let message = with_metadata("a2a-rust.com/budget", json!({"meters": {"tokens": -5}}));
    assert_eq!(budget_of(&message), Err(BudgetError::Malformed));
}
