//! The budget extension (`https://a2a-rust.com/extensions/budget/v1`): the data.
//!
//! A parent carves a grant out of its own budget and attaches it to the message that starts a
//! child: remaining wall-clock time and named meters (tokens, API calls, cents...), for example
//! `{"remainingMs": 60000, "meters": {"tokens": 5000}}`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::extensions::{attach, metadata_value};
use crate::message::Message;

/// The extension's URI.
pub const BUDGET_EXTENSION_URI: &str = "https://a2a-rust.com/extensions/budget/v1";
/// The `Message.metadata` key the grant is stored under.
pub const BUDGET_METADATA_KEY: &str = "a2a-rust.com/budget";
/// The most meters a grant may carry.
pub const MAX_METERS: usize = 16;
/// The longest meter name, in bytes.
pub const MAX_METER_NAME_LEN: usize = 64;

/// A budget granted to a task.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_types::budget::BudgetGrant;
///
/// let grant = BudgetGrant::with_time(Duration::from_secs(60)).with_meter("tokens", 5_000);
/// assert_eq!(
///     serde_json::to_value(&grant).unwrap(),
///     serde_json::json!({"remainingMs": 60000, "meters": {"tokens": 5000}}),
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetGrant {
    /// Wall-clock time the task may use, in milliseconds; unlimited when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "remaining_ms")]
    pub remaining_ms: Option<u64>,
    /// Named quantities the task may spend.
    #[serde(default)]
    pub meters: BTreeMap<String, u64>,
}

impl BudgetGrant {
    /// A grant of `remaining` time and no meters.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_types::budget::BudgetGrant;
    ///
    /// assert_eq!(BudgetGrant::with_time(Duration::from_secs(2)).remaining_ms, Some(2_000));
    /// ```
    pub fn with_time(remaining: Duration) -> Self {
        Self {
            remaining_ms: Some(u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX)),
            meters: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) a meter.
    ///
    /// ```
    /// use a2a_protocol_types::budget::BudgetGrant;
    ///
    /// let grant = BudgetGrant::default().with_meter("calls", 3).with_meter("calls", 5);
    /// assert_eq!(grant.meters["calls"], 5, "replaced");
    /// ```
    pub fn with_meter(mut self, name: impl Into<String>, amount: u64) -> Self {
        self.meters.insert(name.into(), amount);
        self
    }

    /// The remaining time, if limited.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_types::budget::BudgetGrant;
    ///
    /// assert_eq!(BudgetGrant::default().remaining(), None, "unlimited");
    /// assert_eq!(BudgetGrant::with_time(Duration::from_secs(1)).remaining(), Some(Duration::from_secs(1)));
    /// ```
    pub fn remaining(&self) -> Option<Duration> {
        self.remaining_ms.map(Duration::from_millis)
    }

    /// Checks the meter count and names.
    ///
    /// ```
    /// use a2a_protocol_types::budget::{BudgetError, BudgetGrant};
    ///
    /// assert_eq!(BudgetGrant::default().with_meter("", 1).validate(), Err(BudgetError::EmptyMeterName));
    /// assert!(BudgetGrant::default().with_meter("tokens", 1).validate().is_ok());
    /// ```
    pub fn validate(&self) -> Result<(), BudgetError> {
        if self.meters.len() > MAX_METERS {
            return Err(BudgetError::TooManyMeters);
        }
        for name in self.meters.keys() {
            if name.is_empty() {
                return Err(BudgetError::EmptyMeterName);
            }
            if name.len() > MAX_METER_NAME_LEN {
                return Err(BudgetError::MeterNameTooLong);
            }
        }
        Ok(())
    }
}

/// Why a budget grant is not acceptable.
///
/// ```
/// use a2a_protocol_types::budget::{BudgetError, BudgetGrant};
///
/// let too_many = (0..17).fold(BudgetGrant::default(), |g, i| g.with_meter(format!("m{i}"), 1));
/// assert_eq!(too_many.validate(), Err(BudgetError::TooManyMeters));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// More than [`MAX_METERS`] meters.
    #[error("budget grant has too many meters: send at most 16")]
    TooManyMeters,
    /// A meter name longer than [`MAX_METER_NAME_LEN`] bytes.
    #[error("budget meter name is too long: use at most 64 bytes")]
    MeterNameTooLong,
    /// A meter with an empty name.
    #[error("budget meter name is empty: name every meter")]
    EmptyMeterName,
    /// The metadata value is not a grant object.
    #[error(
        "metadata[\"a2a-rust.com/budget\"] must be an object {{\"remainingMs\": <ms, optional>, \"meters\": {{\"<name>\": <amount>}}}}"
    )]
    Malformed,
}

/// The message's budget grant: `Ok(None)` when it has none, an error when it is malformed.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_types::Message;
/// use a2a_protocol_types::budget::{BudgetGrant, budget_of, set_budget};
///
/// let mut message = Message::user_text("work");
/// assert_eq!(budget_of(&message), Ok(None));
/// let grant = BudgetGrant::with_time(Duration::from_secs(10));
/// set_budget(&mut message, &grant).unwrap();
/// assert_eq!(budget_of(&message), Ok(Some(grant)));
/// ```
pub fn budget_of(message: &Message) -> Result<Option<BudgetGrant>, BudgetError> {
    let Some(value) = metadata_value(message, BUDGET_METADATA_KEY) else {
        return Ok(None);
    };
    let grant = BudgetGrant::deserialize(value).map_err(|_| BudgetError::Malformed)?;
    grant.validate()?;
    Ok(Some(grant))
}

/// Attaches the grant to the message and declares the extension once.
///
/// ```
/// use a2a_protocol_types::Message;
/// use a2a_protocol_types::budget::{BUDGET_EXTENSION_URI, BudgetGrant, set_budget};
///
/// let mut message = Message::user_text("work");
/// set_budget(&mut message, &BudgetGrant::default().with_meter("tokens", 100)).unwrap();
/// assert!(message.declares(BUDGET_EXTENSION_URI));
/// ```
pub fn set_budget(message: &mut Message, grant: &BudgetGrant) -> Result<(), BudgetError> {
    grant.validate()?;
    let value = serde_json::to_value(grant).map_err(|_| BudgetError::Malformed)?;
    attach(message, BUDGET_EXTENSION_URI, BUDGET_METADATA_KEY, value);
    Ok(())
}

/// What a task has left of its grant and what it has spent, as the child's server reports it in
/// status-update metadata and in the task's metadata, under [`BUDGET_METADATA_KEY`].
///
/// ```
/// use a2a_protocol_types::budget::BudgetReport;
///
/// let report: BudgetReport = serde_json::from_str(r#"{"spentMs": 1200, "exhausted": "time"}"#).unwrap();
/// assert_eq!((report.spent_ms, report.exhausted.as_deref()), (1_200, Some("time")));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetReport {
    /// Time left, in milliseconds, when the grant limited time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "remaining_ms")]
    pub remaining_ms: Option<u64>,
    /// What is left of each granted meter.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meters: BTreeMap<String, u64>,
    /// Time spent so far, in milliseconds.
    #[serde(default)]
    #[serde(alias = "spent_ms")]
    pub spent_ms: u64,
    /// Amounts spent so far, by meter.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spent: BTreeMap<String, u64>,
    /// What ran out, when the task ended for lack of budget: `"time"` or a meter's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exhausted: Option<String>,
}

/// The budget report in a metadata object, if there is a well-formed one.
///
/// ```
/// use a2a_protocol_types::Metadata;
/// use a2a_protocol_types::budget::report_of;
///
/// let mut metadata = Metadata::new();
/// metadata.insert("a2a-rust.com/budget".into(), serde_json::json!({"spentMs": 40, "spent": {"tokens": 7}}));
/// let report = report_of(Some(&metadata)).unwrap();
/// assert_eq!(report.spent["tokens"], 7);
/// assert_eq!(report_of(None), None);
/// ```
pub fn report_of(metadata: Option<&crate::Metadata>) -> Option<BudgetReport> {
    metadata
        .and_then(|m| m.get(BUDGET_METADATA_KEY))
        .and_then(|v| BudgetReport::deserialize(v).ok())
}
