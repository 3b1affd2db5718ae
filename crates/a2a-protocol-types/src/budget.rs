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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetGrant {
    /// Wall-clock time the task may use, in milliseconds; unlimited when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_ms: Option<u64>,
    /// Named quantities the task may spend.
    #[serde(default)]
    pub meters: BTreeMap<String, u64>,
}

impl BudgetGrant {
    /// A grant of `remaining` time and no meters.
    pub fn with_time(remaining: Duration) -> Self {
        Self {
            remaining_ms: Some(u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX)),
            meters: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) a meter.
    pub fn with_meter(mut self, name: impl Into<String>, amount: u64) -> Self {
        self.meters.insert(name.into(), amount);
        self
    }

    /// The remaining time, if limited.
    pub fn remaining(&self) -> Option<Duration> {
        self.remaining_ms.map(Duration::from_millis)
    }

    /// Checks the meter count and names.
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
pub fn budget_of(message: &Message) -> Result<Option<BudgetGrant>, BudgetError> {
    let Some(value) = metadata_value(message, BUDGET_METADATA_KEY) else {
        return Ok(None);
    };
    let grant = BudgetGrant::deserialize(value).map_err(|_| BudgetError::Malformed)?;
    grant.validate()?;
    Ok(Some(grant))
}

/// Attaches the grant to the message and declares the extension once.
pub fn set_budget(message: &mut Message, grant: &BudgetGrant) -> Result<(), BudgetError> {
    grant.validate()?;
    let value = serde_json::to_value(grant).map_err(|_| BudgetError::Malformed)?;
    attach(message, BUDGET_EXTENSION_URI, BUDGET_METADATA_KEY, value);
    Ok(())
}

/// What a task has left of its grant and what it has spent, as the child's server reports it in
/// status-update metadata and in the task's metadata, under [`BUDGET_METADATA_KEY`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetReport {
    /// Time left, in milliseconds, when the grant limited time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_ms: Option<u64>,
    /// What is left of each granted meter.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meters: BTreeMap<String, u64>,
    /// Time spent so far, in milliseconds.
    #[serde(default)]
    pub spent_ms: u64,
    /// Amounts spent so far, by meter.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spent: BTreeMap<String, u64>,
    /// What ran out, when the task ended for lack of budget: `"time"` or a meter's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exhausted: Option<String>,
}

/// The budget report in a metadata object, if there is a well-formed one.
pub fn report_of(metadata: Option<&crate::Metadata>) -> Option<BudgetReport> {
    metadata
        .and_then(|m| m.get(BUDGET_METADATA_KEY))
        .and_then(|v| BudgetReport::deserialize(v).ok())
}
