//! Every JSON example of the A2A v1.0.1 specification that shows an A2A object, request or
//! response, read into our types and written back. Test names carry the spec section.
//!
//! Where the spec's own example is not valid JSON (a missing or trailing comma, `/* … */`
//! placeholders, base64 shortened with `...`), the fix is the smallest that makes it valid and is
//! noted beside it. Examples the spec presents as fragments of a larger object are checked with
//! [`fragment`]: every member shown survives the round trip, and nothing else is added but the
//! object's required fields.

use a2a_protocol_types::error::{A2aError, ErrorKind, HttpErrorBody};
use a2a_protocol_types::jsonrpc::{JsonRpcRequest, JsonRpcResponse};
use a2a_protocol_types::message::{Message, Part, PartContent};
use a2a_protocol_types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Reads `example` as `T`, writes it back, and requires the same JSON value. Timestamps are
/// compared as instants (on both sides, so free-form metadata is compared as it is): the
/// spec's examples omit the fraction, we write milliseconds (§5.6.1).
fn round_trip<T: DeserializeOwned + Serialize>(example: &str) -> T {
    let original: Value = serde_json::from_str(example).expect("the example is valid JSON");
    let typed: T = serde_json::from_value(original.clone()).expect("the example deserializes");
    let written = serde_json::to_value(&typed).expect("serializes");
    assert_eq!(
        with_canonical_timestamps(written),
        with_canonical_timestamps(original),
        "round trip changed the example"
    );
    typed
}

/// `value` with every RFC 3339 timestamp string written as [`Timestamp`] writes it.
fn with_canonical_timestamps(value: Value) -> Value {
    match value {
        Value::String(text) => match text.parse::<Timestamp>() {
            Ok(stamp) if text.contains('T') => Value::String(stamp.to_string()),
            _ => Value::String(text),
        },
        Value::Array(items) => items.into_iter().map(with_canonical_timestamps).collect(),
        Value::Object(members) => members
            .into_iter()
            .map(|(k, v)| (k, with_canonical_timestamps(v)))
            .collect(),
        other => other,
    }
}

/// Reads a fragment as `T`, writes it back, and requires every member of the fragment to survive;
/// members the writer adds must be required fields holding their defaults.
fn fragment<T: DeserializeOwned + Serialize>(example: &str) -> T {
    let original: Value = serde_json::from_str(example).expect("the example is valid JSON");
    let typed: T = serde_json::from_value(original.clone()).expect("the fragment deserializes");
    let written = serde_json::to_value(&typed).expect("serializes");
    assert_contains(
        &with_canonical_timestamps(written),
        &with_canonical_timestamps(original),
        "$",
    );
    typed
}

fn assert_contains(written: &Value, shown: &Value, path: &str) {
    match (written, shown) {
        (Value::Object(w), Value::Object(s)) => {
            for (key, value) in s {
                let inner = w
                    .get(key)
                    .unwrap_or_else(|| panic!("{path}.{key} was dropped"));
                assert_contains(inner, value, &format!("{path}.{key}"));
            }
            for (key, value) in w {
                if !s.contains_key(key) {
                    assert!(is_default(value), "{path}.{key} was added with {value}");
                }
            }
        }
        (Value::Array(w), Value::Array(s)) => {
            assert_eq!(w.len(), s.len(), "{path} changed length");
            for (i, (w, s)) in w.iter().zip(s).enumerate() {
                assert_contains(w, s, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(written, shown, "{path} changed"),
    }
}

fn is_default(value: &Value) -> bool {
    match value {
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.values().all(is_default),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
    }
}

/// Removes `/* … */` placeholders, which the spec uses inside otherwise valid JSON.
fn strip_comments(example: &str) -> String {
    let mut out = String::new();
    let mut rest = example;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("closed comment") + start + 2;
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------------------------
// §4.6 Extensions

#[test]
fn s4_6_1_agent_card_declaring_extensions() {
    // Fix: the spec has a trailing comma after `"protocolVersion": "0.3"`. The card also omits
    // the required `version`, so it is checked as a fragment.
    let card: AgentCard = fragment(
        r#"{
  "name": "Research Assistant Agent",
  "description": "AI agent for academic research and fact-checking",
  "supportedInterfaces": [
    {
      "url": "https://research-agent.example.com/a2a/v1",
      "protocolBinding": "HTTP+JSON",
      "protocolVersion": "0.3"
    }
  ],
  "capabilities": {
    "streaming": false,
    "pushNotifications": false,
    "extensions": [
      {
        "uri": "https://standards.org/extensions/citations/v1",
        "description": "Provides citation formatting and source verification",
        "required": false
      },
      {
        "uri": "https://example.com/extensions/geolocation/v1",
        "description": "Location-based search capabilities",
        "required": false
      }
    ]
  },
  "defaultInputModes": ["text/plain"],
  "defaultOutputModes": ["text/plain"],
  "skills": [
    {
      "id": "academic-research",
      "name": "Academic Research Assistant",
      "description": "Provides research assistance with citations and source verification",
      "tags": ["research", "citations", "academic"],
      "examples": ["Find peer-reviewed articles on climate change"],
      "inputModes": ["text/plain"],
      "outputModes": ["text/plain"]
    }
  ]
}"#,
    );
    assert!(card.supports_extension("https://example.com/extensions/geolocation/v1"));
    assert_eq!(card.capabilities.streaming, Some(false));
}

#[test]
fn s4_6_1_request_opting_into_an_extension() {
    let request: SendMessageRequest = round_trip(
        r#"{
  "message": {
    "role": "ROLE_USER",
    "parts": [{"text": "Find restaurants near me"}],
    "extensions": ["https://example.com/extensions/geolocation/v1"],
    "metadata": {
      "https://example.com/extensions/geolocation/v1": {
        "latitude": 37.7749,
        "longitude": -122.4194
      }
    }
  }
}"#,
    );
    assert!(
        request
            .message
            .declares("https://example.com/extensions/geolocation/v1")
    );
}

#[test]
fn s4_6_2_message_extension() {
    let message: Message = round_trip(
        r#"{
  "role": "ROLE_USER",
  "parts": [
    {"text": "Find restaurants near me"}
  ],
  "extensions": ["https://example.com/extensions/geolocation/v1"],
  "metadata": {
    "https://example.com/extensions/geolocation/v1": {
      "latitude": 37.7749,
      "longitude": -122.4194,
      "accuracy": 10.0,
      "timestamp": "2025-10-21T14:30:00Z"
    }
  }
}"#,
    );
    assert_eq!(message.role, MessageRole::User);
}

#[test]
fn s4_6_2_artifact_extension() {
    let artifact: Artifact = round_trip(
        r#"{
  "artifactId": "research-summary-001",
  "name": "Climate Change Summary",
  "parts": [
    {
      "text": "Global temperatures have risen by 1.1°C since pre-industrial times, with significant impacts on weather patterns and sea levels."
    }
  ],
  "extensions": ["https://standards.org/extensions/citations/v1"],
  "metadata": {
    "https://standards.org/extensions/citations/v1": {
      "sources": [
        {
          "title": "Global Temperature Anomalies - 2023 Report",
          "authors": ["Smith, J.", "Johnson, M."],
          "url": "https://climate.gov/reports/2023-temperature",
          "accessDate": "2025-10-21",
          "relevantText": "Global temperatures have risen by 1.1°C"
        }
      ]
    }
  }
}"#,
    );
    assert_eq!(artifact.artifact_id, "research-summary-001");
}

// ---------------------------------------------------------------------------------------------
// §5.8 Custom binding identification

#[test]
fn s5_8_custom_binding_interface() {
    let card: AgentCard = fragment(
        r#"{
  "supportedInterfaces": [
    {
      "url": "wss://agent.example.com/a2a/websocket",
      "protocolBinding": "https://example.com/bindings/websocket/v1",
      "protocolVersion": "1.0"
    }
  ]
}"#,
    );
    assert_eq!(
        card.supported_interfaces[0].protocol_binding,
        "https://example.com/bindings/websocket/v1"
    );
}

// ---------------------------------------------------------------------------------------------
// §6 Common workflows

#[test]
fn s6_1_basic_task_execution() {
    let request: SendMessageRequest = round_trip(
        r#"{
  "message": {
    "role": "ROLE_USER",
    "parts": [{"text": "What is the weather today?"}],
    "messageId": "msg-uuid"
  }
}"#,
    );
    assert_eq!(request.message.id, "msg-uuid");
    let response: SendMessageResponse = round_trip(
        r#"{
  "task": {
    "id": "task-uuid",
    "contextId": "context-uuid",
    "status": {"state": "TASK_STATE_COMPLETED"},
    "artifacts": [{
      "artifactId": "artifact-uuid",
      "name": "Weather Report",
      "parts": [{"text": "Today will be sunny with a high of 75°F"}]
    }]
  }
}"#,
    );
    let SendMessageResponse::Task(task) = response else {
        panic!("a task")
    };
    assert_eq!(task.status.state, TaskState::Completed);
}

#[test]
fn s6_2_streaming_task_execution() {
    round_trip::<SendMessageRequest>(
        r#"{
  "message": {
    "role": "ROLE_USER",
    "parts": [{"text": "Write a detailed report on climate change"}],
    "messageId": "msg-uuid"
  }
}"#,
    );
    let events: Vec<StreamResponse> = [
        r#"{"task": {"id": "task-uuid", "status": {"state": "TASK_STATE_WORKING"}}}"#,
        r##"{"artifactUpdate": {"taskId": "task-uuid", "artifact": {"parts": [{"text": "# Climate Change Report\n\n"}]}}}"##,
        r#"{"statusUpdate": {"taskId": "task-uuid", "status": {"state": "TASK_STATE_COMPLETED"}}}"#,
    ]
    .into_iter()
    .map(round_trip)
    .collect();
    assert!(matches!(events[1], StreamResponse::ArtifactUpdate(_)));
    assert!(events[2].is_final());
}

#[test]
fn s6_3_multi_turn_interaction() {
    round_trip::<SendMessageRequest>(
        r#"{
  "message": {
    "role": "ROLE_USER",
    "parts": [{"text": "Book me a flight"}],
    "messageId": "msg-1"
  }
}"#,
    );
    let response: SendMessageResponse = round_trip(
        r#"{
  "task": {
    "id": "task-uuid",
    "status": {
      "state": "TASK_STATE_INPUT_REQUIRED",
      "message": {
        "role": "ROLE_AGENT",
        "parts": [{"text": "I need more details. Where would you like to fly from and to?"}]
      }
    }
  }
}"#,
    );
    let SendMessageResponse::Task(task) = response else {
        panic!("a task")
    };
    assert!(task.status.state.is_interrupted());
    let follow_up: SendMessageRequest = round_trip(
        r#"{
  "message": {
    "taskId": "task-uuid",
    "role": "ROLE_USER",
    "parts": [{"text": "From San Francisco to New York"}],
    "messageId": "msg-2"
  }
}"#,
    );
    assert_eq!(follow_up.message.task_id, Some(TaskId::new("task-uuid")));
}

#[test]
fn s6_4_version_negotiation_error() {
    round_trip::<SendMessageRequest>(
        r#"{
  "message": {
    "role": "ROLE_USER",
    "parts": [{"text": "Hello"}],
    "messageId": "msg-uuid"
  }
}"#,
    );
    // The response is an RFC 9457 problem document, not the google.rpc.Status body of §11.6
    // that this SDK writes. A client still has to understand it.
    let body: Value = serde_json::from_str(
        r#"{
  "type": "https://a2a-protocol.org/errors/version-not-supported",
  "title": "Protocol Version Not Supported",
  "status": 400,
  "detail": "The requested A2A protocol version 0.5 is not supported by this agent",
  "supportedVersions": ["0.3"]
}"#,
    )
    .expect("valid JSON");
    let error = A2aError::from_http_value(400, &body);
    assert_eq!(error.kind, ErrorKind::VersionNotSupported);
    assert_eq!(
        error.message,
        "The requested A2A protocol version 0.5 is not supported by this agent"
    );
}

#[test]
fn s6_5_list_tasks_by_context() {
    let page: ListTasksResponse = round_trip(
        r#"{
  "tasks": [
    {
      "id": "3f36680c-7f37-4a5f-945e-d78981fafd36",
      "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
      "status": {
        "state": "TASK_STATE_COMPLETED",
        "timestamp": "2024-03-15T10:15:00Z"
      }
    }
  ],
  "totalSize": 5,
  "pageSize": 10,
  "nextPageToken": ""
}"#,
    );
    assert_eq!(page.total_size, 5);
    assert!(page.next_page_token.is_empty());
}

#[test]
fn s6_5_list_working_tasks() {
    let page: ListTasksResponse = round_trip(
        r#"{
  "tasks": [
    {
      "id": "789abc-def0-1234-5678-9abcdef01234",
      "contextId": "another-context-id",
      "status": {
        "state": "TASK_STATE_WORKING",
        "message": {
          "role": "ROLE_AGENT",
          "parts": [
            {
              "text": "Processing your document analysis..."
            }
          ],
          "messageId": "msg-status-update"
        },
        "timestamp": "2024-03-15T10:20:00Z"
      }
    }
  ],
  "totalSize": 1,
  "pageSize": 20,
  "nextPageToken": ""
}"#,
    );
    assert_eq!(page.tasks[0].status.state, TaskState::Working);
}

#[test]
fn s6_5_pagination() {
    // The spec elides the tasks with a comment.
    let page: ListTasksResponse = round_trip(&strip_comments(
        r#"{
  "tasks": [
    /* ... additional tasks */
  ],
  "totalSize": 15,
  "pageSize": 10,
  "nextPageToken": "base64-encoded-next-cursor-token"
}"#,
    ));
    assert_eq!(page.next_page_token, "base64-encoded-next-cursor-token");
}

#[test]
fn s6_5_validation_error() {
    // Another RFC 9457 problem document; read as InvalidParams with one violation per entry.
    let body: Value = serde_json::from_str(
        r#"{
  "status": 400,
  "detail": "Invalid parameters",
  "errors": [
    {
      "field": "pageSize",
      "message": "Must be between 1 and 100 inclusive, got 150"
    },
    {
      "field": "historyLength",
      "message": "Must be non-negative integer, got -5"
    },
    {
      "field": "status",
      "message": "Invalid status value 'TASK_STATE_RUNNING'. Must be one of: TASK_STATE_SUBMITTED, TASK_STATE_WORKING, TASK_STATE_COMPLETED, TASK_STATE_FAILED, TASK_STATE_CANCELED, TASK_STATE_REJECTED, TASK_STATE_INPUT_REQUIRED, TASK_STATE_AUTH_REQUIRED"
    }
  ]
}"#,
    )
    .expect("valid JSON");
    let error = A2aError::from_http_value(400, &body);
    assert_eq!(error.kind, ErrorKind::InvalidParams);
    assert_eq!(error.message, "Invalid parameters");
    let violations: Vec<_> = error
        .details
        .iter()
        .filter_map(|d| match d {
            a2a_protocol_types::error::ErrorDetail::BadRequest(b) => Some(b.field_violations.len()),
            _ => None,
        })
        .collect();
    assert_eq!(violations, vec![3]);
    // Our own enum parser refuses the same bad status with the same list of values.
    let refused = "TASK_STATE_RUNNING".parse::<TaskState>().unwrap_err();
    assert!(refused.to_string().contains("TASK_STATE_AUTH_REQUIRED"));
}

#[test]
fn s6_6_push_notification_setup() {
    let request: SendMessageRequest = round_trip(
        r#"{
  "message": {
    "role": "ROLE_USER",
    "parts": [
      {
        "text": "Generate the Q1 sales report. This usually takes a while. Notify me when it's ready."
      }
    ],
    "messageId": "6dbc13b5-bd57-4c2b-b503-24e381b6c8d6"
  },
  "configuration": {
    "taskPushNotificationConfig": {
      "url": "https://client.example.com/webhook/a2a-notifications",
      "authentication": {
        "scheme": "Bearer",
        "credentials": "secure-client-token-for-task-aaa"
      }
    }
  }
}"#,
    );
    let push = request
        .configuration
        .and_then(|c| c.task_push_notification_config)
        .expect("a push config");
    assert_eq!(push.authentication.expect("auth").scheme, "Bearer");
    round_trip::<SendMessageResponse>(
        r#"{
  "task": {
    "id": "43667960-d455-4453-b0cf-1bae4955270d",
    "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
    "status": {
      "state": "TASK_STATE_SUBMITTED",
      "timestamp": "2024-03-15T11:00:00Z"
    }
  }
}"#,
    );
    let notification: StreamResponse = round_trip(
        r#"{
  "statusUpdate": {
    "taskId": "43667960-d455-4453-b0cf-1bae4955270d",
    "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
    "status": {
      "state": "TASK_STATE_COMPLETED",
      "timestamp": "2024-03-15T18:30:00Z"
    }
  }
}"#,
    );
    assert!(notification.is_final());
}

#[test]
fn s6_7_file_exchange() {
    // Fixes: the spec misses the comma after `raw`, has a trailing comma after `mediaType`, and
    // shortens the base64 with `...`, which is not base64; the `...` is dropped.
    let request: SendMessageRequest = round_trip(
        r#"{
  "message": {
    "role": "ROLE_USER",
    "parts": [
      {
        "text": "Analyze this image and highlight any faces."
      },
      {
        "raw": "iVBORw0KGgoAAAANSUhEUgAAAAUA",
        "filename": "input_image.png",
        "mediaType": "image/png"
      }
    ],
    "messageId": "6dbc13b5-bd57-4c2b-b503-24e381b6c8d6"
  }
}"#,
    );
    let PartContent::Raw(bytes) = &request.message.parts[1].content else {
        panic!("a raw part")
    };
    assert!(bytes.starts_with(b"\x89PNG"));
    let response: SendMessageResponse = round_trip(
        r#"{
  "task": {
    "id": "43667960-d455-4453-b0cf-1bae4955270d",
    "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
    "status": {
      "state": "TASK_STATE_COMPLETED",
      "timestamp": "2024-03-15T12:05:00Z"
    },
    "artifacts": [
      {
        "artifactId": "9b6934dd-37e3-4eb1-8766-962efaab63a1",
        "name": "processed_image_with_faces.png",
        "parts": [
          {
            "url": "https://storage.example.com/processed/task-bbb/output.png?token=xyz",
            "filename": "output.png",
            "mediaType": "image/png"
          }
        ]
      }
    ]
  }
}"#,
    );
    let SendMessageResponse::Task(task) = response else {
        panic!("a task")
    };
    assert!(matches!(
        task.artifacts[0].parts[0].content,
        PartContent::Url(_)
    ));
}

#[test]
fn s6_8_structured_data_exchange() {
    round_trip::<SendMessageRequest>(
        r#"{
  "message": {
    "role": "ROLE_USER",
    "parts": [
      {
        "text": "Show me a list of my open IT tickets",
        "metadata": {
          "mediaType": "application/json",
          "schema": {
            "type": "array",
            "items": {
              "type": "object",
              "properties": {
                "ticketNumber": { "type": "string" },
                "description": { "type": "string" }
              }
            }
          }
        }
      }
    ],
    "messageId": "85b26db5-ffbb-4278-a5da-a7b09dea1b47"
  }
}"#,
    );
    let response: SendMessageResponse = round_trip(
        r#"{
  "task": {
    "id": "d8c6243f-5f7a-4f6f-821d-957ce51e856c",
    "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
    "status": {
      "state": "TASK_STATE_COMPLETED",
      "timestamp": "2025-04-17T17:47:09.680794Z"
    },
    "artifacts": [
      {
        "artifactId": "c5e0382f-b57f-4da7-87d8-b85171fad17c",
        "parts": [
          {
            "text": "[{\"ticketNumber\":\"REQ12312\",\"description\":\"request for VPN access\"},{\"ticketNumber\":\"REQ23422\",\"description\":\"Add to DL - team-gcp-onboarding\"}]"
          }
        ]
      }
    ]
  }
}"#,
    );
    let SendMessageResponse::Task(task) = response else {
        panic!("a task")
    };
    let stamp = task.status.timestamp.expect("a timestamp");
    assert_eq!(stamp.to_string(), "2025-04-17T17:47:09.680794Z");
}

#[test]
fn s6_9_public_card_announcing_an_extended_card() {
    // "Response includes:" — a fragment of a card.
    let card: AgentCard = fragment(
        r#"{
  "capabilities": {
    "extendedAgentCard": true
  },
  "securitySchemes": {
    "google": {
      "openIdConnectSecurityScheme": {
        "openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"
      }
    }
  }
}"#,
    );
    assert_eq!(card.capabilities.extended_agent_card, Some(true));
}

#[test]
fn s6_9_extended_card_response() {
    // The skills are elided with a comment; the card is a fragment.
    let card: AgentCard = fragment(&strip_comments(
        r#"{
  "name": "Extended Agent with Additional Skills",
  "skills": [
    /* Extended skills available to authenticated users */
  ]
}"#,
    ));
    assert_eq!(card.name, "Extended Agent with Additional Skills");
}

// ---------------------------------------------------------------------------------------------
// §8 Agent card

#[test]
fn s8_4_2_signature() {
    round_trip::<a2a_protocol_types::agent_card::AgentCardSignature>(
        r#"{
  "protected": "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpPU0UiLCJraWQiOiJrZXktMSIsImprdSI6Imh0dHBzOi8vZXhhbXBsZS5jb20vYWdlbnQvandrcy5qc29uIn0",
  "signature": "QFdkNLNszlGj3z3u0YQGt_T9LixY3qtdQpZmsTdDHDe3fXV9y9-B3m2-XgCpzuhiLt8E0tV6HXoZKHv4GtHgKQ"
}"#,
    );
}

const SAMPLE_CARD: &str = r#"{
  "name": "GeoSpatial Route Planner Agent",
  "description": "Provides advanced route planning, traffic analysis, and custom map generation services. This agent can calculate optimal routes, estimate travel times considering real-time traffic, and create personalized maps with points of interest.",
  "supportedInterfaces": [
    {"url": "https://georoute-agent.example.com/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
    {"url": "https://georoute-agent.example.com/a2a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
    {"url": "https://georoute-agent.example.com/a2a/json", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
  ],
  "provider": {
    "organization": "Example Geo Services Inc.",
    "url": "https://www.examplegeoservices.com"
  },
  "iconUrl": "https://georoute-agent.example.com/icon.png",
  "version": "1.2.0",
  "documentationUrl": "https://docs.examplegeoservices.com/georoute-agent/api",
  "capabilities": {
    "streaming": true,
    "pushNotifications": true,
    "extendedAgentCard": true
  },
  "securitySchemes": {
    "google": {
      "openIdConnectSecurityScheme": {
        "openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"
      }
    }
  },
  "security": [{ "google": ["openid", "profile", "email"] }],
  "defaultInputModes": ["application/json", "text/plain"],
  "defaultOutputModes": ["application/json", "image/png"],
  "skills": [
    {
      "id": "route-optimizer-traffic",
      "name": "Traffic-Aware Route Optimizer",
      "description": "Calculates the optimal driving route between two or more locations, taking into account real-time traffic conditions, road closures, and user preferences (e.g., avoid tolls, prefer highways).",
      "tags": ["maps", "routing", "navigation", "directions", "traffic"],
      "examples": [
        "Plan a route from '1600 Amphitheatre Parkway, Mountain View, CA' to 'San Francisco International Airport' avoiding tolls.",
        "{\"origin\": {\"lat\": 37.422, \"lng\": -122.084}, \"destination\": {\"lat\": 37.7749, \"lng\": -122.4194}, \"preferences\": [\"avoid_ferries\"]}"
      ],
      "inputModes": ["application/json", "text/plain"],
      "outputModes": [
        "application/json",
        "application/vnd.geo+json",
        "text/html"
      ]
    },
    {
      "id": "custom-map-generator",
      "name": "Personalized Map Generator",
      "description": "Creates custom map images or interactive map views based on user-defined points of interest, routes, and style preferences. Can overlay data layers.",
      "tags": ["maps", "customization", "visualization", "cartography"],
      "examples": [
        "Generate a map of my upcoming road trip with all planned stops highlighted.",
        "Show me a map visualizing all coffee shops within a 1-mile radius of my current location."
      ],
      "inputModes": ["application/json"],
      "outputModes": [
        "image/png",
        "image/jpeg",
        "application/json",
        "text/html"
      ]
    }
  ],
  "signatures": [
    {
      "protected": "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpPU0UiLCJraWQiOiJrZXktMSIsImprdSI6Imh0dHBzOi8vZXhhbXBsZS5jb20vYWdlbnQvandrcy5qc29uIn0",
      "signature": "QFdkNLNszlGj3z3u0YQGt_T9LixY3qtdQpZmsTdDHDe3fXV9y9-B3m2-XgCpzuhiLt8E0tV6HXoZKHv4GtHgKQ"
    }
  ]
}"#;

#[test]
fn s8_5_sample_agent_card() {
    // The sample still uses the v0.3 member `security` in its OpenAPI shape. We read it as
    // `securityRequirements` and write the v1.0 shape of a2a.proto; everything else is unchanged.
    let mut expected: Value = serde_json::from_str(SAMPLE_CARD).expect("valid JSON");
    let object = expected.as_object_mut().expect("an object");
    object.remove("security");
    object.insert(
        "securityRequirements".into(),
        json!([{ "schemes": { "google": { "list": ["openid", "profile", "email"] } } }]),
    );
    let card: AgentCard = serde_json::from_str(SAMPLE_CARD).expect("the sample deserializes");
    assert_eq!(serde_json::to_value(&card).expect("serializes"), expected);
    // And the v1.0 shape round-trips exactly.
    round_trip::<AgentCard>(&expected.to_string());
    assert_eq!(card.supported_interfaces.len(), 3);
    assert_eq!(card.skills[1].id, "custom-map-generator");
}

// ---------------------------------------------------------------------------------------------
// §9 JSON-RPC binding

#[test]
fn s9_2_and_9_3_request_envelopes() {
    // Both elide the params with a comment.
    for example in [
        r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "SendMessage",
  "params": { /* SendMessageRequest */ }
}"#,
        r#"{
  "jsonrpc": "2.0",
  "id": "unique-request-id",
  "method": "category/action",
  "params": { /* method-specific parameters */ }
}"#,
        r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "SendMessage",
  "params": { /* SendMessageRequest object */ }
}"#,
    ] {
        round_trip::<JsonRpcRequest>(&strip_comments(example));
    }
}

/// Round-trips a JSON-RPC request and its params as the typed request.
fn rpc<T: DeserializeOwned + Serialize>(example: &str) -> (JsonRpcRequest, T) {
    let envelope: JsonRpcRequest = round_trip(example);
    let params = envelope.params.clone().expect("params");
    let typed = round_trip::<T>(&params.to_string());
    (envelope, typed)
}

#[test]
fn s9_4_3_get_task() {
    let (envelope, request) = rpc::<GetTaskRequest>(
        r#"{
  "jsonrpc": "2.0",
  "id": 2,
  "method": "GetTask",
  "params": {
    "id": "task-uuid",
    "historyLength": 10
  }
}"#,
    );
    assert_eq!(envelope.method, "GetTask");
    assert_eq!(request.history_length, Some(10));
}

#[test]
fn s9_4_4_list_tasks() {
    let (_, request) = rpc::<ListTasksRequest>(
        r#"{
  "jsonrpc": "2.0",
  "id": 3,
  "method": "ListTasks",
  "params": {
    "contextId": "context-uuid",
    "status": "TASK_STATE_WORKING",
    "pageSize": 50,
    "pageToken": "cursor-token"
  }
}"#,
    );
    assert_eq!(request.status, Some(TaskState::Working));
    assert_eq!(request.page_token.as_deref(), Some("cursor-token"));
}

#[test]
fn s9_4_5_cancel_task() {
    let (_, request) = rpc::<CancelTaskRequest>(
        r#"{
  "jsonrpc": "2.0",
  "id": 4,
  "method": "CancelTask",
  "params": {
    "id": "task-uuid"
  }
}"#,
    );
    assert_eq!(request.id, "task-uuid");
}

#[test]
fn s9_4_6_subscribe_to_task() {
    let (_, request) = rpc::<SubscribeToTaskRequest>(
        r#"{
  "jsonrpc": "2.0",
  "id": 5,
  "method": "SubscribeToTask",
  "params": {
    "id": "task-uuid"
  }
}"#,
    );
    assert_eq!(request.id, "task-uuid");
}

#[test]
fn s9_4_8_get_extended_agent_card() {
    let envelope: JsonRpcRequest = round_trip(
        r#"{
  "jsonrpc": "2.0",
  "id": 6,
  "method": "GetExtendedAgentCard"
}"#,
    );
    assert!(envelope.params.is_none());
}

#[test]
fn s9_5_invalid_params_error() {
    let response: JsonRpcResponse = round_trip(
        r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "error": {
    "code": -32602,
    "message": "Invalid parameters",
    "data": [
      {
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        "fieldViolations": [
          {
            "field": "message.parts",
            "description": "At least one part is required"
          }
        ]
      }
    ]
  }
}"#,
    );
    let wire = response.outcome.expect_err("an error");
    let error = A2aError::from_jsonrpc(&wire);
    assert_eq!(error.kind, ErrorKind::InvalidParams);
    assert_eq!(error.to_jsonrpc(), wire);
}

#[test]
fn s9_5_task_not_found_error() {
    let response: JsonRpcResponse = round_trip(
        r#"{
  "jsonrpc": "2.0",
  "id": 2,
  "error": {
    "code": -32001,
    "message": "Task not found",
    "data": [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "TASK_NOT_FOUND",
        "domain": "a2a-protocol.org",
        "metadata": {
          "taskId": "nonexistent-task-id",
          "timestamp": "2025-11-09T10:30:00.000Z"
        }
      }
    ]
  }
}"#,
    );
    let wire = response.outcome.expect_err("an error");
    let error = A2aError::from_jsonrpc(&wire);
    assert_eq!(error.kind, ErrorKind::TaskNotFound);
    assert_eq!(
        error.error_info().expect("error info").metadata["taskId"],
        "nonexistent-task-id"
    );
    assert_eq!(error.to_jsonrpc(), wire);
}

#[test]
fn s9_5_our_task_not_found_has_the_documented_shape() {
    let wire = serde_json::to_value(A2aError::task_not_found("nonexistent-task-id").to_jsonrpc())
        .expect("serializes");
    assert_eq!(wire["code"], -32001);
    assert_eq!(
        wire["data"][0]["@type"],
        "type.googleapis.com/google.rpc.ErrorInfo"
    );
    assert_eq!(wire["data"][0]["reason"], "TASK_NOT_FOUND");
    assert_eq!(wire["data"][0]["domain"], "a2a-protocol.org");
    assert_eq!(wire["data"][0]["metadata"]["taskId"], "nonexistent-task-id");
}

// ---------------------------------------------------------------------------------------------
// §11 HTTP+JSON binding

#[test]
fn s11_2_request_with_service_parameters() {
    let request: SendMessageRequest = round_trip(
        r#"{
  "message": {
    "role": "ROLE_USER",
    "parts": [{"text": "Find restaurants near me"}]
  }
}"#,
    );
    assert!(request.message.id.is_empty());
    assert_eq!(
        extensions::parse_extensions_header(
            "https://example.com/extensions/geolocation/v1,https://standards.org/extensions/citations/v1"
        ),
        vec![
            "https://example.com/extensions/geolocation/v1",
            "https://standards.org/extensions/citations/v1"
        ]
    );
}

#[test]
fn s11_4_send_message() {
    let request: SendMessageRequest = round_trip(
        r#"{
  "message": {
    "messageId": "uuid",
    "role": "ROLE_USER",
    "parts": [{"text": "Hello"}]
  },
  "configuration": {
    "acceptedOutputModes": ["text/plain"]
  }
}"#,
    );
    assert_eq!(
        request
            .configuration
            .expect("configuration")
            .accepted_output_modes,
        vec!["text/plain"]
    );
    round_trip::<SendMessageResponse>(
        r#"{
  "task": {
    "id": "task-uuid",
    "contextId": "context-uuid",
    "status": {
      "state": "TASK_STATE_COMPLETED"
    }
  }
}"#,
    );
}

#[test]
fn s11_6_error_body() {
    let body: HttpErrorBody = round_trip(
        r#"{
  "error": {
    "code": 404,
    "status": "NOT_FOUND",
    "message": "The specified task ID does not exist or is not accessible",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "TASK_NOT_FOUND",
        "domain": "a2a-protocol.org",
        "metadata": {
          "taskId": "task-123",
          "timestamp": "2025-11-09T10:30:00.000Z"
        }
      }
    ]
  }
}"#,
    );
    let error = A2aError::from_http(404, &body);
    assert_eq!(error.kind, ErrorKind::TaskNotFound);
    assert_eq!(error.to_http(), (404, body));
}

// ---------------------------------------------------------------------------------------------
// §12.7 Custom binding declaration

#[test]
fn s12_7_custom_binding_declaration() {
    let card: AgentCard = fragment(
        r#"{
  "supportedInterfaces": [
    {
      "url": "wss://agent.example.com/a2a/websocket",
      "protocolBinding": "https://example.com/bindings/websocket/v1"
    }
  ]
}"#,
    );
    assert!(card.supported_interfaces[0].protocol_version.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Appendix A.2 Migration

#[test]
fn a2_1_current_part_shapes() {
    let text: Part = round_trip(r#"{"text": "Hello, world!"}"#);
    assert_eq!(text.as_text(), Some("Hello, world!"));
    // Fix: the spec shortens the base64 with `...`, which is not base64.
    let file: Part = round_trip(
        r#"{
  "raw": "iVBORw0KGgo=",
  "filename": "diagram.png",
  "mediaType": "image/png"
}"#,
    );
    assert_eq!(file.filename.as_deref(), Some("diagram.png"));
}

#[test]
fn a2_1_legacy_parts_are_read_and_written_in_the_current_shape() {
    let text: Part =
        serde_json::from_str(r#"{"kind": "text", "text": "Hello, world!"}"#).expect("reads");
    assert_eq!(
        serde_json::to_value(&text).expect("writes"),
        json!({"text": "Hello, world!"})
    );
    let file: Part = serde_json::from_str(
        r#"{
  "kind": "file",
  "file": {
    "name": "diagram.png",
    "mimeType": "image/png",
    "fileWithBytes": "iVBORw0KGgo="
  }
}"#,
    )
    .expect("reads");
    assert_eq!(
        serde_json::to_value(&file).expect("writes"),
        json!({"raw": "iVBORw0KGgo=", "filename": "diagram.png", "mediaType": "image/png"})
    );
}

#[test]
fn a2_2_extended_card_capability() {
    let card: AgentCard = fragment(
        r#"{
  "capabilities": {
    "streaming": true,
    "extendedAgentCard": true
  }
}"#,
    );
    assert_eq!(card.capabilities.extended_agent_card, Some(true));
}
