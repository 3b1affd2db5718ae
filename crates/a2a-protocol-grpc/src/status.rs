//! A2A errors as gRPC statuses (spec §10.6 and the table of §5.4): the status code for the
//! error's kind, its message, and its details (`google.rpc.ErrorInfo` with the A2A reason,
//! `RetryInfo`, `BadRequest`) in `grpc-status-details-bin`; and back.

use std::collections::HashMap;

use a2a_protocol_types::error::{
    BadRequest, ERROR_DOMAIN, ErrorDetail, ErrorInfo, FieldViolation, RetryInfo,
};
use a2a_protocol_types::{A2aError, ErrorKind};
use tonic::Code;
use tonic_types::StatusExt;

/// The status code of an error kind, as the spec's table maps it.
///
/// ```
/// use a2a_protocol_grpc::status::code_of;
/// use a2a_protocol_types::ErrorKind;
///
/// assert_eq!(code_of(ErrorKind::TaskNotFound), tonic::Code::NotFound);
/// assert_eq!(code_of(ErrorKind::ResourceExhausted), tonic::Code::Unavailable);
/// ```
pub fn code_of(kind: ErrorKind) -> Code {
    match kind.rpc_status() {
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "NOT_FOUND" => Code::NotFound,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        "PERMISSION_DENIED" => Code::PermissionDenied,
        "UNAVAILABLE" => Code::Unavailable,
        "UNIMPLEMENTED" => Code::Unimplemented,
        "RESOURCE_EXHAUSTED" => Code::ResourceExhausted,
        _ => Code::Internal,
    }
}

/// The gRPC status for `error`: its code, message and details. An error without an
/// `ErrorInfo` gets one naming its kind, as the spec requires.
///
/// ```
/// use a2a_protocol_grpc::status::{from_status, to_status};
/// use a2a_protocol_types::{A2aError, ErrorKind};
///
/// let status = to_status(&A2aError::task_not_found("t-1"));
/// assert_eq!(status.code(), tonic::Code::NotFound);
/// assert_eq!(from_status(&status).kind, ErrorKind::TaskNotFound);
/// ```
pub fn to_status(error: &A2aError) -> tonic::Status {
    let mut details: Vec<tonic_types::ErrorDetail> = error
        .details
        .iter()
        .filter_map(|detail| match detail {
            ErrorDetail::ErrorInfo(info) => Some(
                tonic_types::ErrorInfo::new(
                    info.reason.clone(),
                    info.domain.clone(),
                    info.metadata
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect::<HashMap<_, _>>(),
                )
                .into(),
            ),
            ErrorDetail::BadRequest(bad) => Some(
                tonic_types::BadRequest::new(
                    bad.field_violations
                        .iter()
                        .map(|v| tonic_types::FieldViolation::new(&v.field, &v.description))
                        .collect::<Vec<_>>(),
                )
                .into(),
            ),
            ErrorDetail::RetryInfo(retry) => {
                Some(tonic_types::RetryInfo::new(Some(retry.retry_delay)).into())
            }
            // A detail of a type this build does not know travels on the HTTP bindings only.
            ErrorDetail::Other(_) => None,
        })
        .collect();
    if error.error_info().is_none() {
        details.insert(
            0,
            tonic_types::ErrorInfo::new(error.kind.reason(), ERROR_DOMAIN, HashMap::new()).into(),
        );
    }
    tonic::Status::with_error_details_vec(code_of(error.kind), error.message.clone(), details)
}

/// The A2A error a gRPC status carries: its kind from the `ErrorInfo` reason, else from the
/// status code.
pub fn from_status(status: &tonic::Status) -> A2aError {
    let mut details = Vec::new();
    let mut kind = None;
    for detail in status.get_error_details_vec() {
        match detail {
            tonic_types::ErrorDetail::ErrorInfo(info) => {
                if info.domain == ERROR_DOMAIN || kind.is_none() {
                    kind = kind.or_else(|| ErrorKind::from_reason(&info.reason));
                }
                details.push(ErrorDetail::ErrorInfo(ErrorInfo {
                    reason: info.reason,
                    domain: info.domain,
                    metadata: info.metadata.into_iter().collect(),
                }));
            }
            tonic_types::ErrorDetail::BadRequest(bad) => {
                details.push(ErrorDetail::BadRequest(BadRequest {
                    field_violations: bad
                        .field_violations
                        .into_iter()
                        .map(|v| FieldViolation {
                            field: v.field,
                            description: v.description,
                        })
                        .collect(),
                }));
            }
            tonic_types::ErrorDetail::RetryInfo(retry) => {
                if let Some(delay) = retry.retry_delay {
                    details.push(ErrorDetail::RetryInfo(RetryInfo { retry_delay: delay }));
                }
            }
            _ => {}
        }
    }
    let kind = kind.unwrap_or_else(|| kind_of(status.code()));
    let mut error = A2aError::new(kind, status.message());
    if details
        .iter()
        .any(|d| matches!(d, ErrorDetail::ErrorInfo(_)))
    {
        error.details = details;
    } else {
        error.details.extend(details);
    }
    error
}

/// The likeliest kind for a status that names none.
fn kind_of(code: Code) -> ErrorKind {
    match code {
        Code::InvalidArgument | Code::OutOfRange => ErrorKind::InvalidParams,
        Code::NotFound => ErrorKind::TaskNotFound,
        Code::FailedPrecondition => ErrorKind::UnsupportedOperation,
        Code::Unimplemented => ErrorKind::UnsupportedOperation,
        Code::Unauthenticated => ErrorKind::Unauthenticated,
        Code::PermissionDenied => ErrorKind::PermissionDenied,
        Code::Unavailable | Code::ResourceExhausted => ErrorKind::ResourceExhausted,
        _ => ErrorKind::Internal,
    }
}
