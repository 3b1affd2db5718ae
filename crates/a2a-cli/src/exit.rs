//! Why a command failed, as a message for people and an exit code for scripts.

use std::process::ExitCode;

use a2a_protocol_client::{ClientError, FailureClass};

/// The exit codes, listed in `a2a --help`.
pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  internal error
  2  bad arguments (including a malformed idempotency key)
  3  the agent could not be reached: nothing was sent
  4  the agent answered with an error (unknown task, refused, not an A2A agent), or the
     task it answered with ended failed or rejected
  5  the connection failed mid-call: the agent may have acted; retry a send with its key
  6  the store could not be opened or swept";

/// A failed command.
#[derive(Debug)]
pub(crate) struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// Bad arguments.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(2, message)
    }

    /// A store that cannot be opened or swept.
    pub(crate) fn store(message: impl Into<String>) -> Self {
        Self::new(6, message)
    }

    /// Anything that is our fault rather than the user's or the agent's.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(1, message)
    }

    /// A failed call to the agent at `url`, with its exit code chosen by what the failure
    /// means: nothing sent, a definite answer, or an unknown outcome.
    pub(crate) fn call(url: &str, error: &ClientError) -> Self {
        if let ClientError::Config(_) = error {
            return Self::usage(error.to_string());
        }
        match error.class() {
            FailureClass::NotSent => Self::new(
                3,
                format!("cannot reach {url}: {error}. Is the agent running there?"),
            ),
            FailureClass::Ambiguous => Self::new(
                5,
                format!("the call to {url} was cut off: {error}. The agent may have acted on it."),
            ),
            FailureClass::Refused(_) | FailureClass::Final => {
                let failure = Self::new(4, error.to_string());
                match error.kind() {
                    Some(a2a_protocol_client::types::ErrorKind::Unauthenticated) => failure
                        .with_hint(
                            "The agent requires authentication: pass --api-key-env NAME or \
                             --bearer-env NAME, naming the environment variable that holds \
                             your credential (its card's securitySchemes say which kind).",
                        ),
                    _ => failure,
                }
            }
        }
    }

    /// A send answered with a task that ended `failed` or `rejected`: the call worked, the
    /// work did not, and a script must not take it for success.
    pub(crate) fn task_ended(id: &str, state: &str, why: Option<String>) -> Self {
        let why = why.map(|why| format!(": {why}")).unwrap_or_default();
        Self::new(4, format!("task {id} ended {state}{why}"))
    }

    /// Adds a hint on what to do next.
    pub(crate) fn with_hint(mut self, hint: &str) -> Self {
        self.message.push('\n');
        self.message.push_str(hint);
        self
    }

    /// Whether the outcome of the call is unknown (it may have run).
    pub(crate) fn is_ambiguous(&self) -> bool {
        self.code == 5
    }

    /// Prints the message to stderr and returns the exit code.
    pub(crate) fn report(self) -> ExitCode {
        eprintln!("a2a: {}", self.message);
        ExitCode::from(self.code)
    }

    fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}
