//! The serialization rules the spec sets (§5.5–5.7) and the leniency we extend to real peers.

use a2a_protocol_types::error::{A2aError, ErrorKind};
use a2a_protocol_types::jsonrpc::{JsonRpcId, JsonRpcRequest, JsonRpcResponse};
use a2a_protocol_types::*;
use serde_json::{Value, json};

#[test]
fn enums_are_written_as_their_proto_names() {
    assert_eq!(
        json!(TaskState::InputRequired),
        json!("TASK_STATE_INPUT_REQUIRED")
    );
    assert_eq!(json!(MessageRole::User), json!("ROLE_USER"));
}

#[test]
fn enums_are_read_from_names_numbers_and_v0_3_spellings() {
    for (input, expected) in [
        (json!("TASK_STATE_COMPLETED"), TaskState::Completed),
        (json!(3), TaskState::Completed),
        (json!("completed"), TaskState::Completed),
        (json!("input-required"), TaskState::InputRequired),
    ] {
        assert_eq!(
            serde_json::from_value::<TaskState>(input).expect("reads"),
            expected
        );
    }
    assert_eq!(
        serde_json::from_value::<MessageRole>(json!("agent")).expect("reads"),
        MessageRole::Agent
    );
}

#[test]
fn an_enum_value_this_build_does_not_know_reads_as_unspecified() {
    // A newer peer's value, or a peer's own marker such as the JS SDK's "UNRECOGNIZED", must
    // not make the whole object unreadable.
    for unknown in [
        json!("TASK_STATE_RUNNING"),
        json!("UNRECOGNIZED"),
        json!(99),
        json!(-1),
    ] {
        assert_eq!(
            serde_json::from_value::<TaskState>(unknown).expect("reads"),
            TaskState::Unspecified
        );
    }
    let task: Task = serde_json::from_value(json!({
        "id": "t-1",
        "contextId": "c-1",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "history": [{"messageId": "m-1", "role": "UNRECOGNIZED", "parts": [{"text": "hi"}]}]
    }))
    .expect("a task with one unknown role still reads");
    assert_eq!(task.history[0].role, MessageRole::Unspecified);
    assert_eq!(task.status.state, TaskState::Completed);
    // Input that names a value on purpose stays strict.
    assert!("TASK_STATE_RUNNING".parse::<TaskState>().is_err());
}

#[test]
fn proto_field_names_are_read_as_well_as_json_names() {
    let request: SendMessageRequest = serde_json::from_value(json!({
        "message": {
            "message_id": "m-1",
            "role": "ROLE_USER",
            "parts": [{"text": "hi", "media_type": "text/plain"}],
            "context_id": "c-1",
            "task_id": "t-1",
            "reference_task_ids": ["t-0"]
        },
        "configuration": {
            "history_length": 2,
            "return_immediately": true,
            "accepted_output_modes": ["text/plain"]
        }
    }))
    .expect("proto names read");
    assert_eq!(request.message.id.as_str(), "m-1");
    assert_eq!(request.message.context_id, Some(ContextId::new("c-1")));
    assert_eq!(request.message.task_id, Some(TaskId::new("t-1")));
    assert_eq!(
        request.message.parts[0].media_type.as_deref(),
        Some("text/plain")
    );
    assert_eq!(request.history_length(), Some(2));
    assert!(request.returns_immediately());
    // Written back, the JSON names only.
    let written = serde_json::to_string(&request).expect("writes");
    assert!(
        written.contains("\"messageId\"") && !written.contains("message_id"),
        "{written}"
    );
    // Both spellings of one field is a repeated field.
    let both = json!({"messageId": "a", "message_id": "b", "role": "ROLE_USER", "parts": []});
    let error = serde_json::from_value::<Message>(both).expect_err("a repeated field");
    assert!(error.to_string().contains("duplicate field"), "{error}");
    let page: ListTasksRequest = serde_json::from_value(
        json!({"page_size": 5, "status_timestamp_after": "2026-01-01T00:00:00Z"}),
    )
    .expect("reads");
    assert_eq!(page.page_size, Some(5));
    assert!(page.status_timestamp_after.is_some());
}

#[test]
fn unset_fields_are_omitted() {
    let message = Message {
        id: MessageId::new("m"),
        ..Message::user_text("x")
    };
    assert_eq!(
        serde_json::to_value(&message).expect("serializes"),
        json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]})
    );
    let task = Task::new(
        "t",
        "",
        TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: None,
        },
    );
    assert_eq!(
        serde_json::to_value(&task).expect("serializes"),
        json!({"id": "t", "status": {"state": "TASK_STATE_WORKING"}})
    );
}

#[test]
fn empty_and_null_fields_from_peers_read_as_unset() {
    let message: Message = serde_json::from_value(json!({
        "messageId": "m",
        "role": "ROLE_USER",
        "parts": [{"text": "x"}],
        "contextId": "",
        "taskId": null,
        "referenceTaskIds": [],
        "extensions": null,
        "metadata": null
    }))
    .expect("reads");
    assert_eq!(message.context_id, None);
    assert_eq!(message.task_id, None);
    assert_eq!(message.reference_task_ids, None);
    assert_eq!(message.extensions, None);
    assert_eq!(message.metadata, None);

    let task: Task = serde_json::from_value(json!({
        "id": "t",
        "contextId": null,
        "status": {"state": "TASK_STATE_SUBMITTED", "message": null, "timestamp": null},
        "artifacts": null,
        "history": [],
        "metadata": {}
    }))
    .expect("reads");
    assert!(task.context_id.is_empty() && task.artifacts.is_empty() && task.history.is_empty());
}

#[test]
fn unknown_fields_are_ignored() {
    let message: Message = serde_json::from_value(json!({
        "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x", "kind": "text"}], "kind": "message"
    }))
    .expect("reads");
    assert_eq!(message.text(), "x");
}

#[test]
fn a_part_must_hold_exactly_one_kind_of_content() {
    assert!(serde_json::from_value::<Part>(json!({})).is_err());
    assert!(serde_json::from_value::<Part>(json!({"text": "a", "url": "b"})).is_err());
    assert!(serde_json::from_value::<Part>(json!({"raw": "not base64!"})).is_err());
}

#[test]
fn raw_bytes_accept_every_base64_alphabet() {
    for encoded in ["+/8=", "+/8", "-_8=", "-_8"] {
        let part: Part = serde_json::from_value(json!({ "raw": encoded })).expect("reads");
        assert_eq!(
            part.content,
            PartContent::Raw(vec![0xfb, 0xff]),
            "{encoded}"
        );
    }
    assert_eq!(json!(Part::raw(vec![0xfb, 0xff]))["raw"], "+/8=");
}

#[test]
fn timestamps_are_rfc3339_in_utc() {
    let stamp: Timestamp =
        serde_json::from_value(json!("2025-10-28T12:30:00.142+02:00")).expect("reads");
    assert_eq!(stamp.to_string(), "2025-10-28T10:30:00.142Z");
    // The instant the clock hits once in a thousand: a whole second keeps its milliseconds.
    let whole_second: Timestamp = "2026-12-03T14:11:18+01:00".parse().expect("reads");
    assert_eq!(whole_second.to_string(), "2026-12-03T13:11:18.000Z");
    assert_eq!(
        serde_json::to_value(whole_second).expect("writes"),
        json!("2026-12-03T13:11:18.000Z")
    );
    let finer: Timestamp = "2026-12-03T13:11:18.000001Z".parse().expect("reads");
    assert_eq!(
        finer.to_string(),
        "2026-12-03T13:11:18.000001Z",
        "finer precision is kept"
    );
    assert!(serde_json::from_value::<Timestamp>(json!("yesterday")).is_err());
}

#[test]
fn stream_events_say_when_a_stream_ends() {
    let status = |state| {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: TaskId::new("t"),
            context_id: ContextId::new("c"),
            status: TaskStatus::new(state),
            metadata: None,
            generation: 0,
        })
    };
    assert!(!status(TaskState::Working).is_final());
    assert!(status(TaskState::InputRequired).is_final());
    assert!(status(TaskState::Canceled).is_final());
    assert!(StreamResponse::Message(Message::agent_text("hi")).is_final());
}

#[test]
fn history_is_truncated_to_the_most_recent_messages() {
    let mut task = Task::new("t", "c", TaskStatus::new(TaskState::Working));
    task.history = (0..5).map(|i| Message::user_text(i.to_string())).collect();
    task.truncate_history(Some(2));
    assert_eq!(
        task.history.iter().map(Message::text).collect::<Vec<_>>(),
        ["3", "4"]
    );
    task.truncate_history(Some(0));
    assert!(task.history.is_empty());
    assert!(
        !json!(task)
            .as_object()
            .expect("object")
            .contains_key("history")
    );
}

#[test]
fn error_kinds_map_as_spec_section_5_4_says() {
    let table = [
        (ErrorKind::TaskNotFound, -32001, 404),
        (ErrorKind::TaskNotCancelable, -32002, 400),
        (ErrorKind::PushNotificationNotSupported, -32003, 400),
        (ErrorKind::UnsupportedOperation, -32004, 400),
        (ErrorKind::ContentTypeNotSupported, -32005, 400),
        (ErrorKind::InvalidAgentResponse, -32006, 500),
        (ErrorKind::ExtendedAgentCardNotConfigured, -32007, 400),
        (ErrorKind::ExtensionSupportRequired, -32008, 400),
        (ErrorKind::VersionNotSupported, -32009, 400),
        (ErrorKind::ParseError, -32700, 400),
        (ErrorKind::InvalidRequest, -32600, 400),
        (ErrorKind::MethodNotFound, -32601, 404),
        (ErrorKind::InvalidParams, -32602, 400),
        (ErrorKind::Internal, -32603, 500),
        (ErrorKind::ResourceExhausted, -32603, 503),
    ];
    for (kind, code, status) in table {
        assert_eq!(
            (kind.jsonrpc_code(), kind.http_status()),
            (code, status),
            "{kind}"
        );
        assert_eq!(ErrorKind::from_reason(kind.reason()), Some(kind));
    }
    assert_eq!(ErrorKind::TaskNotCancelable.reason(), "TASK_NOT_CANCELABLE");
}

#[test]
fn every_error_survives_both_bindings() {
    for &kind in ErrorKind::ALL {
        let error = A2aError::new(kind, "something happened").with_metadata("taskId", "t-1");
        let rpc = error.to_jsonrpc();
        assert_eq!(A2aError::from_jsonrpc(&rpc), error, "{kind} over JSON-RPC");
        let (status, body) = error.to_http();
        assert_eq!(
            A2aError::from_http(status, &body),
            error,
            "{kind} over HTTP"
        );
    }
}

#[test]
fn a_capacity_refusal_carries_retry_advice() {
    let error = A2aError::resource_exhausted("index full", std::time::Duration::from_millis(1500));
    let wire = serde_json::to_value(error.to_jsonrpc()).expect("serializes");
    assert_eq!(wire["code"], -32603);
    assert_eq!(wire["data"][0]["reason"], "RESOURCE_EXHAUSTED");
    assert_eq!(
        wire["data"][1]["@type"],
        "type.googleapis.com/google.rpc.RetryInfo"
    );
    assert_eq!(wire["data"][1]["retryDelay"], "1.500s");
    let back = A2aError::from_jsonrpc(&error.to_jsonrpc());
    assert_eq!(back.kind, ErrorKind::ResourceExhausted);
    assert_eq!(
        back.retry_after(),
        Some(std::time::Duration::from_millis(1500))
    );
    assert!(back.kind.is_retryable());
}

#[test]
fn identifiers_from_requests_are_escaped_in_error_messages() {
    let error = A2aError::task_not_found("evil\nFAKE LOG LINE");
    assert!(!error.message.contains('\n'), "{}", error.message);
}

#[test]
fn json_rpc_ids_distinguish_null_from_absent() {
    let with_null: JsonRpcRequest =
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": null, "method": "GetTask"}))
            .expect("reads");
    assert_eq!(with_null.id, Some(JsonRpcId::Null));
    let notification: JsonRpcRequest =
        serde_json::from_value(json!({"jsonrpc": "2.0", "method": "GetTask"})).expect("reads");
    assert_eq!(notification.id, None);
    let string_id: JsonRpcRequest =
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": "a", "method": "GetTask"}))
            .expect("reads");
    assert_eq!(string_id.id, Some(JsonRpcId::from("a")));
}

#[test]
fn json_rpc_responses_hold_a_result_or_an_error() {
    let ok: JsonRpcResponse<Task> = serde_json::from_value(json!({
        "jsonrpc": "2.0", "id": 1, "result": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}}
    }))
    .expect("reads");
    assert_eq!(ok.outcome.expect("ok").id, "t");
    let neither =
        serde_json::from_value::<JsonRpcResponse<Value>>(json!({"jsonrpc": "2.0", "id": 1}));
    assert!(neither.is_err());
    // A null result is a result: the Python and JavaScript SDKs answer a deleted push config so.
    let null = serde_json::from_value::<JsonRpcResponse<Value>>(
        json!({"jsonrpc": "2.0", "id": 1, "result": null}),
    )
    .expect("a null result reads");
    assert_eq!(null.outcome.expect("ok"), Value::Null);
    let null_task = serde_json::from_value::<JsonRpcResponse<Task>>(
        json!({"jsonrpc": "2.0", "id": 1, "result": null}),
    );
    assert!(
        null_task.is_err(),
        "a null where a task belongs is an error"
    );
    let wrong_version = serde_json::from_value::<JsonRpcResponse<Value>>(
        json!({"jsonrpc": "1.0", "id": 1, "result": 1}),
    );
    assert!(wrong_version.is_err());
    let written = serde_json::to_value(JsonRpcResponse::success(
        JsonRpcId::from(7),
        json!({"a": 1}),
    ))
    .expect("serializes");
    assert_eq!(
        written,
        json!({"jsonrpc": "2.0", "id": 7, "result": {"a": 1}})
    );
}

#[test]
fn a_generation_is_read_from_a_newer_peer_but_never_written_on_the_v1_0_wire() {
    // A2A v1.0.1's Task, TaskStatusUpdateEvent and TaskArtifactUpdateEvent have no
    // `generation`, and strict v1.0 readers refuse a member they do not know.
    let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
    task.generation = 12_345_678_901;
    let mut status = TaskStatusUpdateEvent {
        task_id: "t-1".into(),
        context_id: "c-1".into(),
        status: TaskStatus::new(TaskState::Working),
        metadata: None,
        generation: 4,
    };
    let artifact = TaskArtifactUpdateEvent {
        task_id: "t-1".into(),
        context_id: "c-1".into(),
        artifact: Artifact::new("a-1", vec![Part::text("x")]),
        append: false,
        last_chunk: true,
        metadata: None,
        generation: 5,
    };
    let written = [
        serde_json::to_value(StreamResponse::Task(task.clone())).expect("writes"),
        serde_json::to_value(StreamResponse::StatusUpdate(status.clone())).expect("writes"),
        serde_json::to_value(StreamResponse::ArtifactUpdate(artifact)).expect("writes"),
    ];
    for json in written {
        assert!(!json.to_string().contains("generation"), "{json}");
    }
    // Read as a v1.1 server writes it (an int64 as a string), as a number, or not at all.
    for (written, expected) in [(json!("7"), 7), (json!(7), 7), (Value::Null, 0)] {
        let read: Task = serde_json::from_value(json!({
            "id": "t", "status": {"state": "TASK_STATE_WORKING"}, "generation": written
        }))
        .expect("reads");
        assert_eq!(read.generation, expected);
    }
    let without: Task =
        serde_json::from_value(json!({"id": "t", "status": {"state": "TASK_STATE_WORKING"}}))
            .expect("never required");
    assert_eq!(without.generation, 0);
    status = serde_json::from_value(
        json!({"taskId": "t-1", "status": {"state": "TASK_STATE_WORKING"}, "generation": "9"}),
    )
    .expect("reads");
    assert_eq!(status.generation, 9);
    let negative = json!({"id": "t", "status": {"state": "TASK_STATE_WORKING"}, "generation": -1});
    assert!(serde_json::from_value::<Task>(negative).is_err());
}
