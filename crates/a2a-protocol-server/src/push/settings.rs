//! How push notifications are accepted and delivered.

use std::time::Duration;

use super::AddressRange;

/// How push notifications are accepted and delivered. The defaults follow the spec's advice
/// (a 10 s request timeout, retries with exponential backoff) and refuse every webhook on a
/// loopback, private, link-local or otherwise internal address.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_server::push::PushSettings;
///
/// let settings = PushSettings::default()
///     .with_allowed(vec!["127.0.0.1".parse()?])
///     .with_max_attempts(5)
///     .with_first_retry(Duration::from_millis(200));
/// assert_eq!(settings.allowed.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PushSettings {
    /// Addresses a webhook may reach although they are not public (for local development,
    /// `127.0.0.1`; for a private network, its CIDR block). Empty by default.
    pub allowed: Vec<AddressRange>,
    /// How many configs one task may have (default 10).
    pub max_configs_per_task: usize,
    /// Attempts at one notification before it becomes a dead letter (default 8).
    pub max_attempts: u32,
    /// The wait before the first retry; each further retry waits twice as long, with jitter
    /// (default 1 s).
    pub first_retry: Duration,
    /// The longest wait between attempts (default 5 min).
    pub max_retry: Duration,
    /// How long one attempt may take, connecting included (default 10 s).
    pub request_timeout: Duration,
    /// How many notifications are in flight at once, over all webhooks (default 32).
    pub concurrency: usize,
    /// How often the outbox is looked at for due notifications (default 250 ms).
    pub poll_interval: Duration,
}

impl Default for PushSettings {
    fn default() -> Self {
        Self {
            allowed: Vec::new(),
            max_configs_per_task: 10,
            max_attempts: 8,
            first_retry: Duration::from_secs(1),
            max_retry: Duration::from_secs(300),
            request_timeout: Duration::from_secs(10),
            concurrency: 32,
            poll_interval: Duration::from_millis(250),
        }
    }
}

impl PushSettings {
    /// Sets [`PushSettings::allowed`].
    pub fn with_allowed(mut self, allowed: Vec<AddressRange>) -> Self {
        self.allowed = allowed;
        self
    }

    /// Sets [`PushSettings::max_configs_per_task`] (at least 1).
    pub fn with_max_configs_per_task(mut self, max: usize) -> Self {
        self.max_configs_per_task = max.max(1);
        self
    }

    /// Sets [`PushSettings::max_attempts`] (at least 1).
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Sets [`PushSettings::first_retry`].
    pub fn with_first_retry(mut self, wait: Duration) -> Self {
        self.first_retry = wait;
        self
    }

    /// Sets [`PushSettings::max_retry`].
    pub fn with_max_retry(mut self, wait: Duration) -> Self {
        self.max_retry = wait;
        self
    }

    /// Sets [`PushSettings::request_timeout`].
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`PushSettings::concurrency`] (at least 1).
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// Sets [`PushSettings::poll_interval`] (at least 10 ms).
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// The wait before attempt `failed + 1`, after `failed` failed attempts: doubling from
    /// [`PushSettings::first_retry`] up to [`PushSettings::max_retry`], then a random part of
    /// the second half taken off, so webhooks that failed together do not retry together.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::push::PushSettings;
    ///
    /// let settings = PushSettings::default();
    /// let third = settings.retry_after(3);
    /// assert!(third >= Duration::from_secs(4) && third <= Duration::from_secs(8));
    /// assert!(settings.retry_after(40) <= settings.max_retry);
    /// ```
    pub fn retry_after(&self, failed: u32) -> Duration {
        let doubled = self
            .first_retry
            .saturating_mul(1u32.checked_shl(failed.min(31)).unwrap_or(u32::MAX));
        let ceiling = doubled.min(self.max_retry);
        // A v4 UUID is 122 random bits; 16 of them pick the jitter.
        let random = (uuid::Uuid::new_v4().as_u128() & 0xffff) as u32;
        let jitter = ceiling / 2 * random / 0xffff;
        ceiling - jitter
    }
}
