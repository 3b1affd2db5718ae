//! A turn's budget: the time and meters granted, what has been spent, and the report that
//! rides on status updates.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use a2a_protocol_types::budget::{BudgetGrant, BudgetReport};

/// The budget of one turn.
pub(crate) struct BudgetState {
    grant: BudgetGrant,
    started: Instant,
    spent: Mutex<BTreeMap<String, u64>>,
    exhausted: Mutex<Option<String>>,
}

impl BudgetState {
    pub(crate) fn new(grant: BudgetGrant) -> Self {
        Self {
            grant,
            started: Instant::now(),
            spent: Mutex::default(),
            exhausted: Mutex::default(),
        }
    }

    /// The time the turn may take, when limited.
    pub(crate) fn time_limit(&self) -> Option<Duration> {
        self.grant.remaining()
    }

    /// Records spending; returns the meter that ran out, if this spend exceeded its grant.
    pub(crate) fn spend(&self, meter: &str, amount: u64) -> Option<String> {
        let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        let total = spent.entry(meter.to_owned()).or_insert(0);
        *total = total.saturating_add(amount);
        let over = self
            .grant
            .meters
            .get(meter)
            .is_some_and(|granted| *total > *granted);
        over.then(|| meter.to_owned())
    }

    /// Marks what ran out.
    pub(crate) fn exhaust(&self, what: &str) {
        *self.exhausted.lock().unwrap_or_else(|e| e.into_inner()) = Some(what.to_owned());
    }

    /// The report as it stands.
    pub(crate) fn report(&self) -> BudgetReport {
        let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let spent = self.spent.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let meters = self
            .grant
            .meters
            .iter()
            .map(|(name, granted)| {
                (
                    name.clone(),
                    granted.saturating_sub(spent.get(name).copied().unwrap_or(0)),
                )
            })
            .collect();
        BudgetReport {
            remaining_ms: self.grant.remaining_ms.map(|ms| ms.saturating_sub(elapsed)),
            meters,
            spent_ms: elapsed,
            spent,
            exhausted: self
                .exhausted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }
}
