//! Property tests: the wire types survive a JSON round trip, and `validate_key` accepts exactly
//! the keys the extension allows.

#[path = "strategies/mod.rs"]
mod strategies;

use a2a_protocol_types::idempotency::{MAX_KEY_LEN, MIN_KEY_LEN, generate_key, validate_key};
use proptest::prelude::*;
use strategies::*;

/// Free-form JSON here may hold any integer.
fn json_int() -> impl Strategy<Value = i64> {
    any::<i64>()
}

fn round_trips<T>(value: &T) -> Result<(), TestCaseError>
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    round_trips_as(value, value)
}

/// `value` written and read back is `expected`.
fn round_trips_as<T>(value: &T, expected: &T) -> Result<(), TestCaseError>
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_string(value).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back: T =
        serde_json::from_str(&json).map_err(|e| TestCaseError::fail(format!("{e}: {json}")))?;
    prop_assert_eq!(&back, expected, "{}", json);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn messages_round_trip(message in message()) {
        round_trips(&message)?;
    }

    #[test]
    fn tasks_round_trip(task in task()) {
        let mut expected = task.clone();
        expected.generation = 0;
        round_trips_as(&task, &expected)?;
    }

    #[test]
    fn stream_responses_round_trip(event in stream_response()) {
        // The v1.0 JSON leaves out the generation (an A2A v1.1 field).
        let mut expected = event.clone();
        expected.set_generation(0);
        round_trips_as(&event, &expected)?;
    }

    #[test]
    fn agent_cards_round_trip(card in agent_card()) {
        round_trips(&card)?;
    }

    #[test]
    fn accepted_keys_have_only_allowed_bytes_and_a_length_in_range(key in "\\PC{0,300}") {
        if validate_key(&key).is_ok() {
            prop_assert!((MIN_KEY_LEN..=MAX_KEY_LEN).contains(&key.len()));
            prop_assert!(key.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b)));
        }
    }

    #[test]
    fn keys_of_allowed_bytes_and_length_are_accepted(key in "[A-Za-z0-9_.:-]{16,255}") {
        prop_assert_eq!(validate_key(&key), Ok(()));
    }

    #[test]
    fn any_key_with_a_forbidden_byte_is_refused(
        prefix in "[A-Za-z0-9_.:-]{0,100}",
        bad in any::<char>().prop_filter("forbidden", |c| !(c.is_ascii_alphanumeric() || "-_.:".contains(*c))),
        suffix in "[A-Za-z0-9_.:-]{0,100}",
    ) {
        let key = format!("{prefix}{bad}{suffix}");
        prop_assert!(validate_key(&key).is_err());
    }
}

#[test]
fn generated_keys_are_valid_and_distinct() {
    let a = generate_key();
    let b = generate_key();
    assert_eq!(validate_key(&a), Ok(()));
    assert_eq!(a.len(), 64);
    assert_ne!(a, b);
}
