//! Property tests: a value of the model survives the trip to its proto form and back, and so
//! does the proto encoding of it (what a peer receives).

#[path = "../../a2a-protocol-types/tests/strategies/mod.rs"]
mod strategies;

use a2a_protocol_grpc::pb;
use a2a_protocol_types::{AgentCard, Message, StreamResponse, Task};
use proptest::prelude::*;
use strategies::*;

/// `google.protobuf.Struct` holds doubles: integers travel exactly up to 2^53.
fn json_int() -> impl Strategy<Value = i64> {
    -(1i64 << 53) + 1..(1i64 << 53)
}

/// To the proto form, through its binary encoding, and back.
fn through_the_wire<W, T>(value: T) -> Result<T, TestCaseError>
where
    W: prost::Message + Default + From<T>,
    T: TryFrom<W>,
    T::Error: std::fmt::Display,
{
    let bytes = W::from(value).encode_to_vec();
    let wire = W::decode(bytes.as_slice()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    T::try_from(wire).map_err(|e| TestCaseError::fail(e.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn messages_survive_the_proto(message in message()) {
        prop_assert_eq!(through_the_wire::<pb::Message, Message>(message.clone())?, message);
    }

    #[test]
    fn tasks_survive_the_proto(task in task()) {
        let mut expected = task.clone();
        expected.generation = 0;
        prop_assert_eq!(through_the_wire::<pb::Task, Task>(task)?, expected);
    }

    #[test]
    fn stream_events_survive_the_proto(event in stream_response()) {
        let mut expected = event.clone();
        expected.set_generation(0); // an A2A v1.1 field, which the v1.0 proto lacks
        prop_assert_eq!(through_the_wire::<pb::StreamResponse, StreamResponse>(event)?, expected);
    }

    #[test]
    fn agent_cards_survive_the_proto(card in agent_card()) {
        prop_assert_eq!(through_the_wire::<pb::AgentCard, AgentCard>(card.clone())?, card);
    }
}

#[test]
fn a_message_without_its_parts_content_is_refused_with_the_field_named() {
    let message = pb::Message {
        message_id: "m-1".into(),
        role: pb::Role::User as i32,
        parts: vec![pb::Part::default()],
        ..Default::default()
    };
    let error = Message::try_from(message).expect_err("a part must hold something");
    assert_eq!(
        error.to_string(),
        "the required field `Part.content` is not set"
    );
}

#[test]
fn numbers_json_cannot_hold_read_as_protojson_writes_them() {
    let value = |n: f64| prost_types::Value {
        kind: Some(prost_types::value::Kind::NumberValue(n)),
    };
    let metadata = prost_types::Struct {
        fields: [
            ("nan".to_owned(), value(f64::NAN)),
            ("inf".to_owned(), value(f64::INFINITY)),
            ("half".to_owned(), value(0.5)),
            ("three".to_owned(), value(3.0)),
        ]
        .into_iter()
        .collect(),
    };
    let task = pb::Task {
        id: "t-1".into(),
        status: Some(pb::TaskStatus {
            state: pb::TaskState::Working as i32,
            ..Default::default()
        }),
        metadata: Some(metadata),
        ..Default::default()
    };
    let task = Task::try_from(task).expect("valid");
    let metadata = serde_json::Value::Object(task.metadata.expect("kept"));
    assert_eq!(
        metadata,
        serde_json::json!({ "nan": "NaN", "inf": "Infinity", "half": 0.5, "three": 3 })
    );
}
