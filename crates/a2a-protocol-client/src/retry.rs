//! [`RetryPolicy`]: which failed calls are re-sent, how often, and how far apart.
//!
//! Without a policy nothing is ever re-sent. With one, a failure is classified
//! ([`FailureClass`]): *not sent* and *refused* failures are retried for any call (honouring
//! `Retry-After`); *ambiguous* failures only for calls that cannot do harm twice: reads,
//! `CancelTask`, deleting a push config, and keyed sends to a peer known to honour the
//! idempotency extension. Everything else is surfaced at once.

use std::time::Duration;

use crate::error::{ClientError, FailureClass};
use crate::operation::Operation;

/// How to retry failed calls.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_client::RetryPolicy;
///
/// let policy = RetryPolicy::default();
/// assert_eq!((policy.max_attempts, policy.deadline), (4, Duration::from_secs(30)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in all, the first included. Default 4.
    pub max_attempts: u32,
    /// The first backoff. Default 200 ms.
    pub initial_backoff: Duration,
    /// The longest backoff. Default 5 s.
    pub max_backoff: Duration,
    /// The time after which no new attempt starts, measured from the first. Default 30 s.
    pub deadline: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
            deadline: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The default policy.
    ///
    /// ```
    /// use a2a_protocol_client::RetryPolicy;
    ///
    /// assert_eq!(RetryPolicy::new(), RetryPolicy::default());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`RetryPolicy::max_attempts`] (at least 1).
    ///
    /// ```
    /// use a2a_protocol_client::RetryPolicy;
    ///
    /// assert_eq!(RetryPolicy::new().with_max_attempts(0).max_attempts, 1, "the first attempt always runs");
    /// ```
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Sets [`RetryPolicy::initial_backoff`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::RetryPolicy;
    ///
    /// let policy = RetryPolicy::new().with_initial_backoff(Duration::from_millis(50));
    /// assert!(policy.backoff(0) <= Duration::from_millis(50));
    /// ```
    pub fn with_initial_backoff(mut self, backoff: Duration) -> Self {
        self.initial_backoff = backoff;
        self
    }

    /// Sets [`RetryPolicy::max_backoff`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::RetryPolicy;
    ///
    /// let policy = RetryPolicy::new().with_max_backoff(Duration::from_secs(1));
    /// assert!(policy.backoff(20) <= Duration::from_secs(1));
    /// ```
    pub fn with_max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff;
        self
    }

    /// Sets [`RetryPolicy::deadline`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::RetryPolicy;
    ///
    /// assert_eq!(RetryPolicy::new().with_deadline(Duration::from_secs(5)).deadline.as_secs(), 5);
    /// ```
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The pause before retry number `retry` (0 for the first retry): exponential, capped, with
    /// full jitter from the OS random number generator.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::RetryPolicy;
    ///
    /// let policy = RetryPolicy::new(); // 200 ms, doubling, capped at 5 s
    /// assert!(policy.backoff(0) <= Duration::from_millis(200));
    /// assert!(policy.backoff(2) <= Duration::from_millis(800));
    /// assert!(policy.backoff(10) <= Duration::from_secs(5));
    /// ```
    pub fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(retry.min(31)))
            .min(self.max_backoff);
        ceiling.mul_f64(random_fraction())
    }
}

fn random_fraction() -> f64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return 1.0;
    }
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether a call that failed with `class` may be sent again.
pub(crate) fn may_retry(
    class: FailureClass,
    operation: Operation,
    keyed_to_honouring_peer: bool,
) -> bool {
    match class {
        FailureClass::NotSent | FailureClass::Refused(_) => true,
        FailureClass::Ambiguous => {
            operation.is_repeatable() || (operation.is_send() && keyed_to_honouring_peer)
        }
        FailureClass::Final => false,
    }
}

/// The pause before the next attempt, or `None` when the policy says stop.
pub(crate) fn next_pause(
    policy: &RetryPolicy,
    retries_so_far: u32,
    error: &ClientError,
    left: Duration,
) -> Option<Duration> {
    if retries_so_far + 1 >= policy.max_attempts {
        return None;
    }
    let mut pause = policy.backoff(retries_so_far);
    if let FailureClass::Refused(Some(advised)) = error.class() {
        pause = pause.max(advised);
    }
    (pause < left).then_some(pause)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_the_cap_with_jitter() {
        let policy = RetryPolicy::default()
            .with_initial_backoff(Duration::from_millis(100))
            .with_max_backoff(Duration::from_millis(800));
        for retry in 0..10 {
            let ceiling = Duration::from_millis(100 * 2u64.pow(retry.min(3)));
            let pause = policy.backoff(retry);
            assert!(pause <= ceiling, "{retry}: {pause:?} > {ceiling:?}");
        }
        let samples: std::collections::HashSet<Duration> =
            (0..20).map(|_| policy.backoff(3)).collect();
        assert!(samples.len() > 1, "jitter varies the pause");
    }

    #[test]
    fn ambiguous_failures_are_retried_only_where_they_cannot_do_harm() {
        use Operation::*;
        assert!(may_retry(FailureClass::Ambiguous, GetTask, false));
        assert!(may_retry(FailureClass::Ambiguous, CancelTask, false));
        assert!(!may_retry(FailureClass::Ambiguous, SendMessage, false));
        assert!(may_retry(FailureClass::Ambiguous, SendMessage, true));
        assert!(!may_retry(
            FailureClass::Ambiguous,
            CreateTaskPushNotificationConfig,
            true
        ));
        assert!(may_retry(FailureClass::NotSent, SendMessage, false));
        assert!(may_retry(
            FailureClass::Refused(None),
            SendStreamingMessage,
            false
        ));
        assert!(!may_retry(FailureClass::Final, GetTask, true));
    }
}
