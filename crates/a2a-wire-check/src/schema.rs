//! The A2A v1.0.1 proto as a schema for ProtoJSON: which members an object of each message may
//! have, and which message each operation answers with.

use std::path::Path;
use std::sync::OnceLock;

use prost_reflect::{DescriptorPool, Kind, MessageDescriptor, Value as ProtoValue};
use serde_json::Value;

/// One member, or one value, that a strict v1.0 reader refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Where it is, as a JSON path from the body's root (`$.task.generation`).
    pub path: String,
    /// What is wrong with it.
    pub problem: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.problem)
    }
}

/// The package of the A2A v1.0 messages.
pub const PACKAGE: &str = "lf.a2a.v1";

/// An operation's REST route as the proto's `google.api.http` annotation declares it.
#[derive(Debug, Clone)]
struct Route {
    method: &'static str,
    /// The template's segments: a literal, or `None` for a variable (`{id=*}`), each with the
    /// `:verb` its last segment ends with, if any.
    segments: Vec<Option<String>>,
    verb: Option<String>,
    operation: String,
}

/// The v1.0.1 messages, the error details the bindings carry, and the operations' routes.
#[derive(Debug)]
pub struct Schema {
    pool: DescriptorPool,
    routes: Vec<Route>,
}

impl Schema {
    /// The schema of A2A v1.0.1 (the specification's `a2a.proto`, which the gRPC crate
    /// compiles too), compiled once per process.
    ///
    /// # Panics
    ///
    /// When the proto files do not compile: a broken checkout, not a wire problem.
    pub fn v1_0() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| {
            let here = Path::new(env!("CARGO_MANIFEST_DIR"));
            let a2a = here.join("../a2a-protocol-grpc/proto");
            let own = here.join("proto");
            let pool = protox::Compiler::new([a2a, own])
                .and_then(|mut compiler| {
                    compiler.open_files(["a2a.proto", "google/rpc/error_details.proto"])?;
                    Ok(compiler.descriptor_pool())
                })
                .unwrap_or_else(|error| panic!("the v1.0.1 proto does not compile: {error}"));
            let mut routes = routes(&pool);
            // A `:verb` route first: `tasks/t-1:cancel` is a cancel, not a read of `t-1:cancel`.
            routes.sort_by_key(|route| route.verb.is_none());
            assert!(!routes.is_empty(), "a2a.proto declares no HTTP routes");
            Schema { pool, routes }
        })
    }

    /// The message `name` (`lf.a2a.v1.Task`, `google.rpc.ErrorInfo`).
    pub fn message(&self, name: &str) -> Option<MessageDescriptor> {
        self.pool.get_message_by_name(name)
    }

    /// The message the operation `name` (`SendMessage`, as JSON-RPC names it) answers with.
    pub fn response_of(&self, operation: &str) -> Option<MessageDescriptor> {
        self.pool
            .get_service_by_name(&format!("{PACKAGE}.A2AService"))?
            .methods()
            .find(|method| method.name() == operation)
            .map(|method| method.output())
    }

    /// The operation an HTTP+JSON request names: its method and path (with or without a
    /// tenant, under any prefix), matched against the proto's routes.
    pub fn rest_operation(&self, method: &str, path: &str) -> Option<&str> {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        // The longest match wins, so a tenant is never taken for a prefix.
        (0..=segments.len()).find_map(|skip| {
            self.routes
                .iter()
                .find(|route| route.method == method && route.matches(&segments[skip..]))
                .map(|route| route.operation.as_str())
        })
    }

    /// What in `value`, read as the message `name`, a strict ProtoJSON reader refuses:
    /// members that are no field of their message, oneofs set twice, values of the wrong JSON
    /// kind and enum names that do not exist. `path` is where `value` sits in its body.
    pub fn check(&self, name: &str, value: &Value, path: &str) -> Vec<Violation> {
        let mut found = Vec::new();
        match self.message(name) {
            Some(message) => check_message(&message, value, path, &mut found),
            None => found.push(Violation {
                path: path.to_owned(),
                problem: format!("{name} is no message of the schema"),
            }),
        }
        found
    }
}

impl Route {
    fn matches(&self, segments: &[&str]) -> bool {
        if segments.len() != self.segments.len() {
            return false;
        }
        let Some((last, _)) = segments.split_last() else {
            return false;
        };
        let last_without_verb = match &self.verb {
            Some(verb) => match last.strip_suffix(verb.as_str()) {
                Some(rest) if rest.ends_with(':') => &rest[..rest.len() - 1],
                _ => return false,
            },
            None => last,
        };
        self.segments.iter().enumerate().all(|(i, expected)| {
            let actual = if i + 1 == segments.len() {
                last_without_verb
            } else {
                segments[i]
            };
            match expected {
                Some(literal) => literal == actual,
                None => !actual.is_empty(),
            }
        })
    }
}

/// Every `google.api.http` binding of every A2AService method.
fn routes(pool: &DescriptorPool) -> Vec<Route> {
    let (Some(service), Some(http)) = (
        pool.get_service_by_name(&format!("{PACKAGE}.A2AService")),
        pool.get_extension_by_name("google.api.http"),
    ) else {
        return Vec::new();
    };
    let mut routes = Vec::new();
    for method in service.methods() {
        let options = method.options();
        let rule = options.get_extension(&http);
        let ProtoValue::Message(rule) = rule.as_ref() else {
            continue;
        };
        let mut rules = vec![rule.clone()];
        if let Some(ProtoValue::List(more)) =
            rule.get_field_by_name("additional_bindings").as_deref()
        {
            rules.extend(more.iter().filter_map(|m| m.as_message().cloned()));
        }
        for rule in rules {
            for verb in ["get", "post", "delete", "put", "patch"] {
                if let Some(ProtoValue::String(template)) = rule.get_field_by_name(verb).as_deref()
                    && !template.is_empty()
                {
                    routes.push(route(verb, template, method.name()));
                }
            }
        }
    }
    routes
}

fn route(verb: &str, template: &str, operation: &str) -> Route {
    let method = match verb {
        "get" => "GET",
        "post" => "POST",
        "delete" => "DELETE",
        "put" => "PUT",
        _ => "PATCH",
    };
    let mut parts: Vec<&str> = template.split('/').filter(|s| !s.is_empty()).collect();
    // A `:verb` follows the last segment, after a variable's closing brace or a literal.
    let mut custom = None;
    if let Some(last) = parts.last_mut() {
        let after_brace = last.rfind('}').map_or(0, |i| i + 1);
        if let Some(colon) = last[after_brace..].find(':') {
            custom = Some(last[after_brace + colon + 1..].to_owned());
            *last = &last[..after_brace + colon];
        }
    }
    Route {
        method,
        segments: parts
            .iter()
            .map(|s| (!s.starts_with('{')).then(|| (*s).to_owned()))
            .collect(),
        verb: custom,
        operation: operation.to_owned(),
    }
}

fn check_message(
    message: &MessageDescriptor,
    value: &Value,
    path: &str,
    found: &mut Vec<Violation>,
) {
    let mut report = |problem: String| {
        found.push(Violation {
            path: path.to_owned(),
            problem,
        });
    };
    match message.full_name() {
        // Free-form JSON.
        "google.protobuf.Struct" | "google.protobuf.Value" | "google.protobuf.ListValue" => {
            return;
        }
        "google.protobuf.Timestamp" | "google.protobuf.Duration" => {
            if !value.is_string() {
                report(format!("a {} is written as a string", message.full_name()));
            }
            return;
        }
        _ => {}
    }
    let Value::Object(members) = value else {
        report(format!(
            "a {} is written as a JSON object",
            message.full_name()
        ));
        return;
    };
    let mut oneofs_set: Vec<(String, String)> = Vec::new();
    for (name, member) in members {
        let here = format!("{path}.{name}");
        let Some(field) = message.fields().find(|f| f.json_name() == name) else {
            let problem = match message.get_field_by_name(name) {
                Some(field) => format!(
                    "the proto name of {}.{}; ProtoJSON writers use its JSON name {:?}",
                    message.full_name(),
                    field.name(),
                    field.json_name()
                ),
                None => format!(
                    "{name:?} is not a field of {} in A2A v1.0.1",
                    message.full_name()
                ),
            };
            found.push(Violation {
                path: here,
                problem,
            });
            continue;
        };
        if member.is_null() {
            continue;
        }
        if let Some(oneof) = field.containing_oneof().filter(|o| !o.is_synthetic()) {
            if let Some((_, other)) = oneofs_set.iter().find(|(o, _)| o == oneof.name()) {
                found.push(Violation {
                    path: here.clone(),
                    problem: format!(
                        "{name:?} and {other:?} are one oneof ({}) of {}: set one",
                        oneof.name(),
                        message.full_name()
                    ),
                });
            } else {
                oneofs_set.push((oneof.name().to_owned(), name.clone()));
            }
        }
        if field.is_map() {
            let Value::Object(entries) = member else {
                found.push(Violation {
                    path: here,
                    problem: "a map is written as a JSON object".into(),
                });
                continue;
            };
            let Kind::Message(entry) = field.kind() else {
                continue;
            };
            let value_kind = entry.map_entry_value_field().kind();
            for (key, entry_value) in entries {
                check_value(&value_kind, entry_value, &format!("{here}.{key}"), found);
            }
        } else if field.is_list() {
            let Value::Array(items) = member else {
                found.push(Violation {
                    path: here,
                    problem: "a repeated field is written as a JSON array".into(),
                });
                continue;
            };
            for (i, item) in items.iter().enumerate() {
                check_value(&field.kind(), item, &format!("{here}[{i}]"), found);
            }
        } else {
            check_value(&field.kind(), member, &here, found);
        }
    }
}

fn check_value(kind: &Kind, value: &Value, path: &str, found: &mut Vec<Violation>) {
    let expected = match kind {
        Kind::Message(message) => return check_message(message, value, path, found),
        Kind::Enum(enumeration) => match value {
            Value::String(name) if enumeration.get_value_by_name(name).is_some() => return,
            Value::Number(_) => return,
            _ => format!("one of the names of {}", enumeration.full_name()),
        },
        Kind::String | Kind::Bytes if value.is_string() => return,
        Kind::String | Kind::Bytes => "a string".to_owned(),
        Kind::Bool if value.is_boolean() => return,
        Kind::Bool => "true or false".to_owned(),
        // Numbers: a JSON number, or a decimal string (how ProtoJSON writes 64-bit ones).
        _ if value.is_number()
            || value.as_str().is_some_and(|s| {
                s.parse::<f64>().is_ok() || s == "NaN" || s.ends_with("Infinity")
            }) =>
        {
            return;
        }
        _ => "a number".to_owned(),
    };
    found.push(Violation {
        path: path.to_owned(),
        problem: format!("expected {expected}, found {value}"),
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(name: &str, value: Value) -> Vec<String> {
        Schema::v1_0()
            .check(&format!("{PACKAGE}.{name}"), &value, "$")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_v1_0_task_passes_and_generation_is_named_with_its_path() {
        let task = json!({
            "id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-01-01T00:00:00Z"},
            "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}],
                         "metadata": {"anything": {"goes": [1, "here"]}}}],
            "metadata": {"free": "form"}
        });
        assert_eq!(check("Task", task.clone()), Vec::<String>::new());
        let mut later = json!({"task": task});
        later["task"]["generation"] = json!("3");
        later["task"]["history"][0]["parts"][0]["kind"] = json!("text");
        assert_eq!(
            check("SendMessageResponse", later),
            [
                "$.task.generation: \"generation\" is not a field of lf.a2a.v1.Task in A2A v1.0.1",
                "$.task.history[0].parts[0].kind: \"kind\" is not a field of lf.a2a.v1.Part in A2A v1.0.1",
            ]
        );
    }

    #[test]
    fn proto_names_oneofs_kinds_and_enums_are_checked() {
        let problems = check(
            "StreamResponse",
            json!({"statusUpdate": {"task_id": "t", "status": {"state": "DONE"}},
                   "task": {"id": "t", "status": {}}}),
        );
        assert_eq!(problems.len(), 3, "{problems:#?}");
        for expected in [
            "$.statusUpdate.task_id: the proto name",
            "$.statusUpdate.status.state: expected one of the names",
            "are one oneof (payload) of lf.a2a.v1.StreamResponse",
        ] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected}: {problems:#?}"
            );
        }
        assert_eq!(
            check("ListTasksResponse", json!({"tasks": {}})),
            ["$.tasks: a repeated field is written as a JSON array"]
        );
    }

    #[test]
    fn operations_are_found_by_their_proto_routes() {
        let schema = Schema::v1_0();
        for (method, path, operation) in [
            ("POST", "/message:send", "SendMessage"),
            ("POST", "/acme/message:stream", "SendStreamingMessage"),
            ("GET", "/tasks/t-1", "GetTask"),
            ("GET", "/acme/tasks", "ListTasks"),
            ("POST", "/tasks/t-1:cancel", "CancelTask"),
            ("GET", "/v1/acme/tasks/t-1:subscribe", "SubscribeToTask"),
            (
                "POST",
                "/tasks/t-1/pushNotificationConfigs",
                "CreateTaskPushNotificationConfig",
            ),
            (
                "GET",
                "/tasks/t-1/pushNotificationConfigs",
                "ListTaskPushNotificationConfigs",
            ),
            (
                "GET",
                "/tasks/t-1/pushNotificationConfigs/c",
                "GetTaskPushNotificationConfig",
            ),
            (
                "DELETE",
                "/tasks/t-1/pushNotificationConfigs/c",
                "DeleteTaskPushNotificationConfig",
            ),
            ("GET", "/extendedAgentCard", "GetExtendedAgentCard"),
        ] {
            assert_eq!(
                schema.rest_operation(method, path),
                Some(operation),
                "{method} {path}"
            );
        }
        assert_eq!(schema.rest_operation("GET", "/message:send"), None);
        assert_eq!(schema.rest_operation("POST", "/tasks/t-1:pause"), None);
        assert_eq!(
            schema
                .response_of("SendMessage")
                .map(|m| m.full_name().to_owned()),
            Some("lf.a2a.v1.SendMessageResponse".to_owned())
        );
    }
}
