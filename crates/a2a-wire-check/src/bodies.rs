//! What each body a server writes must be: a JSON-RPC response around the operation's answer,
//! an HTTP+JSON answer or error, a stream event, a push notification, the agent card.

use serde_json::{Map, Value};

use crate::schema::{PACKAGE, Schema, Violation};

/// The request a body answers, as far as the check needs it.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// The HTTP method.
    pub method: String,
    /// The URL's path.
    pub path: String,
    /// The JSON-RPC `method` of the request body, when it has one.
    pub jsonrpc_method: Option<String>,
}

/// The error details the bindings may carry, by `@type`.
const DETAIL_TYPES: [&str; 3] = [
    "google.rpc.ErrorInfo",
    "google.rpc.BadRequest",
    "google.rpc.RetryInfo",
];

fn violation(path: &str, problem: impl Into<String>) -> Violation {
    Violation {
        path: path.to_owned(),
        problem: problem.into(),
    }
}

/// Members of `object` not in `allowed`.
fn only_members(
    object: &Map<String, Value>,
    allowed: &[&str],
    path: &str,
    found: &mut Vec<Violation>,
) {
    for name in object
        .keys()
        .filter(|name| !allowed.contains(&name.as_str()))
    {
        found.push(violation(
            &format!("{path}.{name}"),
            format!(
                "{name:?} is not a member here (allowed: {})",
                allowed.join(", ")
            ),
        ));
    }
}

/// The `details` (HTTP+JSON) or `data` (JSON-RPC) of an error: `@type`d google.rpc details.
fn check_details(schema: &Schema, details: &Value, path: &str, found: &mut Vec<Violation>) {
    let Value::Array(details) = details else {
        found.push(violation(path, "error details are a JSON array"));
        return;
    };
    for (i, detail) in details.iter().enumerate() {
        let here = format!("{path}[{i}]");
        let type_url = detail.get("@type").and_then(Value::as_str).unwrap_or("");
        let Some(name) = type_url
            .strip_prefix("type.googleapis.com/")
            .filter(|name| DETAIL_TYPES.contains(name))
        else {
            found.push(violation(
                &format!("{here}.@type"),
                format!("{type_url:?} is not a google.rpc error detail this check knows"),
            ));
            continue;
        };
        let mut body = detail.clone();
        if let Some(object) = body.as_object_mut() {
            object.remove("@type");
        }
        found.extend(schema.check(name, &body, &here));
    }
}

/// A JSON-RPC 2.0 response: `result` read as `answer` (when known), or an error object.
fn check_jsonrpc(schema: &Schema, body: &Value, answer: Option<&str>, found: &mut Vec<Violation>) {
    let Value::Object(envelope) = body else {
        found.push(violation("$", "a JSON-RPC response is a JSON object"));
        return;
    };
    only_members(envelope, &["jsonrpc", "id", "result", "error"], "$", found);
    match (envelope.get("result"), envelope.get("error")) {
        (Some(_), Some(_)) => found.push(violation(
            "$",
            "a response has a result or an error, not both",
        )),
        (Some(result), None) => match answer {
            Some(name) => found.extend(schema.check(name, result, "$.result")),
            None => found.push(violation(
                "$.result",
                "a result to a request whose method the check could not tell",
            )),
        },
        (None, Some(Value::Object(error))) => {
            only_members(error, &["code", "message", "data"], "$.error", found);
            if !error.get("code").is_some_and(Value::is_i64) {
                found.push(violation("$.error.code", "an error's code is an integer"));
            }
            if let Some(data) = error.get("data") {
                check_details(schema, data, "$.error.data", found);
            }
        }
        (None, Some(_)) => found.push(violation("$.error", "an error is a JSON object")),
        (None, None) => found.push(violation("$", "a response has a result or an error")),
    }
}

/// An HTTP+JSON error body: `{"error": {code, status, message, details}}`.
fn check_rest_error(schema: &Schema, body: &Value, found: &mut Vec<Violation>) {
    let Some(Value::Object(error)) = body.get("error") else {
        found.push(violation(
            "$.error",
            "an HTTP+JSON error body is {\"error\": {...}}",
        ));
        return;
    };
    if let Value::Object(outer) = body {
        only_members(outer, &["error"], "$", found);
    }
    only_members(
        error,
        &["code", "status", "message", "details"],
        "$.error",
        found,
    );
    if let Some(details) = error.get("details") {
        check_details(schema, details, "$.error.details", found);
    }
}

fn message_name(schema: &Schema, operation: &str) -> Option<String> {
    schema
        .response_of(operation)
        .map(|message| message.full_name().to_owned())
}

/// Checks a whole (unary) JSON body answering `asked` with `status`.
pub fn check_body(schema: &Schema, asked: &Asked, status: u16, body: &Value) -> Vec<Violation> {
    let mut found = Vec::new();
    if asked.path.ends_with("/.well-known/agent-card.json") && (200..300).contains(&status) {
        return schema.check(&format!("{PACKAGE}.AgentCard"), body, "$");
    }
    if body.get("jsonrpc").is_some() {
        let answer = asked
            .jsonrpc_method
            .as_deref()
            .and_then(|method| message_name(schema, method));
        check_jsonrpc(schema, body, answer.as_deref(), &mut found);
    } else if !(200..300).contains(&status) {
        check_rest_error(schema, body, &mut found);
    } else {
        match schema
            .rest_operation(&asked.method, &asked.path)
            .and_then(|operation| message_name(schema, operation))
        {
            Some(name) => found.extend(schema.check(&name, body, "$")),
            None => found.push(violation(
                "$",
                format!(
                    "a success answer to {} {}, which is no A2A v1.0 operation",
                    asked.method, asked.path
                ),
            )),
        }
    }
    found
}

/// Checks one stream event's `data`: a `StreamResponse`, wrapped in a JSON-RPC response when
/// the stream answers a JSON-RPC request.
pub fn check_event(schema: &Schema, data: &Value) -> Vec<Violation> {
    let stream_response = format!("{PACKAGE}.StreamResponse");
    if data.get("jsonrpc").is_some() {
        let mut found = Vec::new();
        check_jsonrpc(schema, data, Some(&stream_response), &mut found);
        return found;
    }
    schema.check(&stream_response, data, "$")
}

/// Checks a push notification's body: a `StreamResponse`.
pub fn check_push_body(schema: &Schema, body: &Value) -> Vec<Violation> {
    schema.check(&format!("{PACKAGE}.StreamResponse"), body, "$")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn asked(method: &str, path: &str, jsonrpc: Option<&str>) -> Asked {
        Asked {
            method: method.into(),
            path: path.into(),
            jsonrpc_method: jsonrpc.map(Into::into),
        }
    }

    #[test]
    fn a_jsonrpc_result_is_read_as_its_methods_answer() {
        let schema = Schema::v1_0();
        let body = json!({"jsonrpc": "2.0", "id": 1, "result": {
            "id": "t", "status": {"state": "TASK_STATE_COMPLETED"}, "generation": "2"}});
        let found = check_body(schema, &asked("POST", "/", Some("GetTask")), 200, &body);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "$.result.generation");
        let unknown = check_body(schema, &asked("POST", "/", None), 200, &body);
        assert_eq!(unknown[0].path, "$.result");
    }

    #[test]
    fn error_bodies_are_checked_with_their_details() {
        let schema = Schema::v1_0();
        let rest = json!({"error": {"code": 404, "status": "NOT_FOUND", "message": "no",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
                         "domain": "a2a-protocol.org", "metadata": {"taskId": "t"}}]}});
        assert_eq!(
            check_body(schema, &asked("GET", "/tasks/t", None), 404, &rest),
            []
        );
        let rpc = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32602, "message": "bad",
            "data": [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                      "fieldViolations": [{"field": "f", "description": "d", "hint": "h"}]},
                     {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]}});
        let found = check_body(schema, &asked("POST", "/", None), 200, &rpc);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "$.error.data[0].fieldViolations[0].hint");
    }

    #[test]
    fn events_are_stream_responses() {
        let schema = Schema::v1_0();
        let event = json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_WORKING"}, "generation": "2"}});
        let wrapped = json!({"jsonrpc": "2.0", "id": 9, "result": event.clone()});
        assert_eq!(
            check_event(schema, &event)[0].path,
            "$.statusUpdate.generation"
        );
        assert_eq!(
            check_event(schema, &wrapped)[0].path,
            "$.result.statusUpdate.generation"
        );
        assert_eq!(
            check_push_body(schema, &event)[0].path,
            "$.statusUpdate.generation"
        );
    }
}
