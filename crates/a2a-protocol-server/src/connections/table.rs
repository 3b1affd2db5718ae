//! The table of open connections: which network each comes from and whether it is idle, so a
//! full server makes room by closing idle connections (the longest open first) instead of
//! turning working clients away, and no network holds more than its share of the slots.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use super::activity::Activity;
use crate::network::Network;
use crate::push::AddressRange;

/// The open connections.
#[derive(Debug)]
pub(super) struct Table {
    state: Mutex<State>,
    /// The most connections one network holds.
    per_network: usize,
    /// Addresses without a share (trusted proxies, which carry everyone's connections).
    exempt: Vec<AddressRange>,
}

#[derive(Debug, Default)]
struct State {
    next: u64,
    /// By when they were accepted, the longest open first.
    open: BTreeMap<u64, Entry>,
    held: HashMap<Network, usize>,
}

#[derive(Debug)]
struct Entry {
    /// `None` for an exempt address.
    network: Option<Network>,
    activity: Arc<Activity>,
}

/// A connection's place in the table, given up when it is dropped.
#[derive(Debug)]
pub(super) struct Seat {
    table: Arc<Table>,
    id: u64,
    pub(super) activity: Arc<Activity>,
}

impl Table {
    pub(super) fn new(per_network: usize, exempt: Vec<AddressRange>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::default()),
            per_network: per_network.max(1),
            exempt,
        })
    }

    /// A seat for a connection from `peer`, or `None` when its network holds its share and
    /// none of those connections is idle. At its share, a network's idle connection open
    /// longest is asked to close to make room.
    pub(super) fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Seat> {
        let network =
            (!self.exempt.iter().any(|range| range.contains(peer))).then(|| Network::of(peer));
        let mut state = self.lock();
        if let Some(network) = network {
            let held = state.held.get(&network).copied().unwrap_or(0);
            if held >= self.per_network && !state.evict_idle(|entry| entry.network == Some(network))
            {
                return None;
            }
            *state.held.entry(network).or_default() += 1;
        }
        let id = state.next;
        state.next += 1;
        let activity = Activity::new();
        state.open.insert(
            id,
            Entry {
                network,
                activity: Arc::clone(&activity),
            },
        );
        Some(Seat {
            table: Arc::clone(self),
            id,
            activity,
        })
    }

    /// Asks the idle connection open longest to close; false when none is idle.
    pub(super) fn evict_idle(&self) -> bool {
        self.lock().evict_idle(|_| true)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding it; a poisoned lock still holds consistent counts.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl State {
    fn evict_idle(&mut self, among: impl Fn(&Entry) -> bool) -> bool {
        let idle = self
            .open
            .values()
            .find(|entry| among(entry) && !entry.activity.is_evicted() && entry.activity.is_idle());
        idle.map(|entry| entry.activity.evict()).is_some()
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut state = self.table.lock();
        let Some(entry) = state.open.remove(&self.id) else {
            return;
        };
        if let Some(network) = entry.network
            && let Some(held) = state.held.get_mut(&network)
        {
            *held -= 1;
            if *held == 0 {
                state.held.remove(&network);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn a_network_at_its_share_makes_room_from_its_own_idle_connections() {
        let table = Table::new(2, Vec::new());
        let first = table.admit(address("10.0.0.1")).expect("a seat");
        let second = table.admit(address("10.0.0.2")).expect("a seat");
        let _busy = second.activity.open();
        // At its share: the idle one (first) is asked to go, the busy one stays.
        let third = table.admit(address("10.0.0.3")).expect("a seat");
        assert!(first.activity.is_evicted() && !second.activity.is_evicted());
        // With every connection of the network busy (or already going), a fourth is refused.
        let working = third.activity.open();
        assert!(table.admit(address("10.0.0.4")).is_none());
        // Another network is not held back.
        assert!(table.admit(address("10.0.1.1")).is_some());
        // Closed, the evicted one leaves two busy connections: still the share.
        drop(first);
        assert!(table.admit(address("10.0.0.5")).is_none());
        // Idle again, a connection makes room.
        drop(working);
        assert!(table.admit(address("10.0.0.6")).is_some());
        assert!(third.activity.is_evicted());
    }

    #[test]
    fn exempt_addresses_have_no_share() {
        let table = Table::new(1, vec!["10.0.0.0/8".parse().expect("a range")]);
        let seats: Vec<Seat> = (0..5)
            .map(|_| table.admit(address("10.1.2.3")).expect("a seat"))
            .collect();
        assert!(seats.iter().all(|seat| !seat.activity.is_evicted()));
    }

    #[test]
    fn the_idle_connection_open_longest_goes_first() {
        let table = Table::new(100, Vec::new());
        let busy = table.admit(address("10.0.0.1")).expect("a seat");
        let _open = busy.activity.open();
        let older = table.admit(address("10.0.1.1")).expect("a seat");
        let newer = table.admit(address("10.0.2.1")).expect("a seat");
        assert!(table.evict_idle());
        assert!(older.activity.is_evicted());
        assert!(!newer.activity.is_evicted() && !busy.activity.is_evicted());
        assert!(table.evict_idle());
        assert!(newer.activity.is_evicted());
        assert!(!table.evict_idle(), "the busy one is never evicted");
    }
}
