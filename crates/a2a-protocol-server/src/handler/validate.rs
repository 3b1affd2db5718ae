//! Checks on request parameters, with errors that name the field and say what is allowed.

use a2a_protocol_types::budget::{BudgetGrant, budget_of};
use a2a_protocol_types::lease::{Lease, lease_of};
use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{
    A2aError, AgentCard, ErrorKind, ListTasksRequest, Message, MessageRole, SendMessageRequest,
    TaskId, TaskState,
};

use crate::store::{PageCursor, TaskQuery};

pub(crate) const MAX_PAGE_SIZE: usize = 100;

fn field_error(field: &str, problem: impl Into<String>) -> A2aError {
    let problem = problem.into();
    A2aError::invalid_params(format!("{field}: {problem}")).with_field_violation(field, problem)
}

/// Tenant names no request may use. HTTP+JSON puts the tenant first in the path
/// (`/{tenant}/tasks/{id}`), so a tenant named `tasks` would make `/tasks/...` mean two things.
pub(crate) const RESERVED_TENANTS: &[&str] = &["tasks"];

/// Whether `tenant` is a name no request may use.
pub(crate) fn is_reserved_tenant(tenant: &str) -> bool {
    RESERVED_TENANTS.contains(&tenant)
}

/// The refusal of a reserved tenant name.
pub(crate) fn reserved_tenant_error(tenant: &str) -> A2aError {
    field_error(
        "tenant",
        format!(
            "{tenant:?} is reserved (HTTP+JSON paths would read it as an operation); choose \
             another tenant name"
        ),
    )
}

/// The longest id, context id, message id or tenant name a request may carry, in bytes. Ids
/// are keys in every store's indexes; PostgreSQL cannot index a value much over 2.7 KB, and no
/// generated id comes near this.
pub const MAX_IDENTIFIER_BYTES: usize = 256;

/// Refuses an identifier a store could not keep as given: longer than
/// [`MAX_IDENTIFIER_BYTES`], or holding a control character (PostgreSQL refuses NUL outright,
/// and the others would keep a value no log or terminal shows faithfully).
pub(crate) fn identifier(field: &str, value: &str) -> Result<(), A2aError> {
    if value.len() > MAX_IDENTIFIER_BYTES {
        return Err(field_error(
            field,
            format!(
                "is {} bytes long; at most {MAX_IDENTIFIER_BYTES} are allowed",
                value.len()
            ),
        ));
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(field_error(
            field,
            format!(
                "holds the control character U+{:04X}; identifiers are printable text",
                u32::from(c)
            ),
        ));
    }
    Ok(())
}

/// Refuses a tenant name no request may use (reserved, too long or unprintable), on every
/// operation of every binding.
pub(crate) fn tenant(tenant: &str) -> Result<(), A2aError> {
    if is_reserved_tenant(tenant) {
        return Err(reserved_tenant_error(tenant));
    }
    identifier("tenant", tenant)
}

/// The refusal of a tenant this agent does not serve.
pub(crate) fn unserved_tenant(tenant: &str) -> A2aError {
    let shown: String = tenant.chars().take(64).collect();
    field_error(
        "tenant",
        format!("{shown:?} is not a tenant this agent serves; ask its operator for yours"),
    )
}

/// Refuses a task id no store could keep (see [`identifier`]).
pub(crate) fn task_id(field: &str, id: &TaskId) -> Result<(), A2aError> {
    identifier(field, id.as_str())
}

/// The history limit of a request: `None` for all, an error for a negative value.
pub(crate) fn history_length(value: Option<i32>) -> Result<Option<usize>, A2aError> {
    match value {
        None => Ok(None),
        Some(n) => usize::try_from(n)
            .map(Some)
            .map_err(|_| field_error("historyLength", format!("must be zero or more, got {n}"))),
    }
}

pub(crate) fn message(message: &Message) -> Result<(), A2aError> {
    if message.id.is_empty() {
        return Err(field_error("message.messageId", "is required"));
    }
    identifier("message.messageId", message.id.as_str())?;
    if let Some(id) = &message.task_id {
        task_id("message.taskId", id)?;
    }
    if let Some(context) = &message.context_id {
        identifier("message.contextId", context.as_str())?;
    }
    if message.role == MessageRole::Unspecified {
        return Err(field_error(
            "message.role",
            "must be ROLE_USER or ROLE_AGENT",
        ));
    }
    if message.parts.is_empty() {
        return Err(field_error(
            "message.parts",
            "at least one part is required",
        ));
    }
    Ok(())
}

fn media_type_matches(accepted: &str, actual: &str) -> bool {
    let accepted = accepted.split(';').next().unwrap_or("").trim();
    let actual = actual.split(';').next().unwrap_or("").trim();
    if accepted == "*/*" || accepted.eq_ignore_ascii_case(actual) {
        return true;
    }
    match (accepted.split_once('/'), actual.split_once('/')) {
        (Some((a_type, "*")), Some((b_type, _))) => a_type.eq_ignore_ascii_case(b_type),
        _ => false,
    }
}

/// Every part's media type must be one the agent accepts (its default input modes and its
/// skills' input modes). An agent that lists none accepts anything.
pub(crate) fn content_types(message: &Message, card: &AgentCard) -> Result<(), A2aError> {
    let accepted: Vec<&str> = card
        .default_input_modes
        .iter()
        .chain(card.skills.iter().flat_map(|s| s.input_modes.iter()))
        .map(String::as_str)
        .collect();
    if accepted.is_empty() {
        return Ok(());
    }
    for (index, part) in message.parts.iter().enumerate() {
        // An unlabelled part (plain text or JSON data) is the protocol's own currency.
        let Some(media_type) = part.media_type.as_deref() else {
            continue;
        };
        if !accepted.iter().any(|a| media_type_matches(a, media_type)) {
            let field = format!("message.parts[{index}].mediaType");
            return Err(A2aError::new(
                ErrorKind::ContentTypeNotSupported,
                format!(
                    "{field} is {media_type:?}, which this agent does not accept; it accepts {}",
                    accepted.join(", ")
                ),
            )
            .with_field_violation(field, "unsupported media type"));
        }
    }
    Ok(())
}

/// A send's request, checked once, with what it carries parsed once: how to answer, the
/// message's lease and budget, and the push config sent with it. (Its idempotency key is
/// [`crate::idempotency`]'s to read.)
pub(crate) struct ValidSend {
    pub(crate) tenant: String,
    pub(crate) message: Message,
    /// How many history messages the answer keeps; `None` for all.
    pub(crate) history: Option<usize>,
    /// The caller asked for the task before it settles.
    pub(crate) immediate: bool,
    /// The message's lease, when the agent grants leases (else it is plain metadata).
    pub(crate) lease: Option<Lease>,
    pub(crate) budget: Option<BudgetGrant>,
    pub(crate) push: Option<TaskPushNotificationConfig>,
}

/// Checks a send's request for `card`'s agent (`leases` when it grants them).
pub(crate) fn send(
    request: SendMessageRequest,
    card: &AgentCard,
    leases: Option<&super::leases::Leases>,
) -> Result<ValidSend, A2aError> {
    let history = history_length(request.history_length())?;
    let immediate = request.returns_immediately();
    let SendMessageRequest {
        tenant: tenant_name,
        message: sent,
        configuration,
        ..
    } = request;
    tenant(&tenant_name)?;
    message(&sent)?;
    content_types(&sent, card)?;
    let lease = match leases {
        None => None,
        Some(leases) => {
            let lease =
                lease_of(&sent).map_err(|e| field_error("message.metadata", e.to_string()))?;
            if let Some(lease) = &lease {
                leases.check(lease)?;
            }
            lease
        }
    };
    let budget = budget_of(&sent).map_err(|e| field_error("message.metadata", e.to_string()))?;
    Ok(ValidSend {
        tenant: tenant_name,
        message: sent,
        history,
        immediate,
        lease,
        budget,
        push: configuration.and_then(|c| c.task_push_notification_config),
    })
}

/// A validated `ListTasks` query.
pub(crate) fn task_query(
    request: &ListTasksRequest,
    default_page_size: usize,
) -> Result<TaskQuery, A2aError> {
    let page_size = match request.page_size {
        None => default_page_size,
        Some(n) if (1..=MAX_PAGE_SIZE as i32).contains(&n) => n as usize,
        Some(n) => {
            return Err(field_error(
                "pageSize",
                format!("must be between 1 and {MAX_PAGE_SIZE} inclusive, got {n}"),
            ));
        }
    };
    if request.status == Some(TaskState::Unspecified) {
        return Err(field_error(
            "status",
            "TASK_STATE_UNSPECIFIED is not a filter; omit status instead",
        ));
    }
    if let Some(context) = &request.context_id {
        identifier("contextId", context.as_str())?;
    }
    let cursor = match request.page_token.as_deref() {
        None => None,
        Some(token) => Some(
            PageCursor::decode(token)
                .filter(|cursor| identifier("pageToken", &cursor.task_id).is_ok())
                .ok_or_else(|| {
                    field_error(
                        "pageToken",
                        "is not a token this server issued; pass nextPageToken unchanged",
                    )
                })?,
        ),
    };
    Ok(TaskQuery {
        caller: None,
        context_id: request.context_id.clone(),
        status: request.status,
        status_timestamp_after: request.status_timestamp_after,
        page_size,
        cursor,
    })
}
