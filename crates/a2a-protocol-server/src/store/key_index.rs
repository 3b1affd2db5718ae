//! The in-memory index of idempotency keys: which task and message each held key belongs to,
//! oldest first, so expiry pops from the front and costs time proportional to what expires.
//!
//! Keys are chosen by clients, so the index hashes them with std's seeded SipHash, built to
//! resist inputs crafted to collide; a hash an attacker could learn to collide would turn each
//! claim into a scan of every held key. Each key is hashed once, when it is claimed, and keeps
//! its hash, so growing the index moves keys without hashing them again.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher, RandomState};
use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_protocol_types::TaskId;
use hashlink::LinkedHashMap;

use super::{ClaimOutcome, KeyClaim, StoreError};

/// The hash of a key's scoped text: SipHash with a per-process random key.
type KeyHasher = RandomState;

/// The keys held in one namespace.
pub(crate) struct KeyIndex {
    entries: LinkedHashMap<HeldKey, Held, BuildHasherDefault<StoredHash>>,
    hasher: KeyHasher,
    /// How many keys each holder has, for the per-holder quota.
    holders: HashMap<Arc<str>, Holder>,
    /// How many keys are held by clients known only by their network (or not at all):
    /// together they may hold half the index, so authenticated callers always have the other.
    unauthenticated: usize,
}

/// Whether keys charged to `holder` are an authenticated caller's (`caller:NAME`, see
/// [`KeyClaim::charged_to`]).
fn authenticated(holder: Option<&str>) -> bool {
    holder.is_some_and(|name| name.starts_with("caller:"))
}

/// How many keys an index holds, and for how long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyLimits {
    /// How long a key is held after its claim.
    pub(crate) ttl: Duration,
    /// The most keys held at once.
    pub(crate) max: usize,
    /// The most one holder keeps while the index is at least half full.
    pub(crate) per_holder: usize,
    /// The most all clients without a caller identity keep together.
    pub(crate) unauthenticated: usize,
}

impl KeyLimits {
    /// The limits `config` sets.
    pub(crate) fn of(config: &crate::store::InMemoryStoreConfig) -> Self {
        Self {
            ttl: config.idempotency_key_ttl,
            max: config.max_idempotency_keys,
            per_holder: config.max_idempotency_keys_per_holder,
            unauthenticated: config.max_unauthenticated_idempotency_keys,
        }
    }
}

/// When a held key expires, and whose quota it counts against.
struct Held {
    expires_at: Instant,
    charged_to: Option<Arc<str>>,
}

/// One holder's share of the index (its name, shared by every key it holds, is the map's key).
struct Holder {
    held: usize,
    /// When the holder's oldest key expires, found when the holder was last refused, so a
    /// client hammering at its quota costs one scan, not one per request.
    room_at: Option<Instant>,
}

impl KeyIndex {
    pub(crate) fn new() -> Self {
        Self {
            entries: LinkedHashMap::default(),
            hasher: KeyHasher::new(),
            holders: HashMap::new(),
            unauthenticated: 0,
        }
    }

    /// Claims `claim`'s key for its message and task, unless the key is held: then the answer
    /// is a replay (same message) or a conflict (another message). Expired keys are dropped
    /// first. A new key past `limits.max` held is refused until the oldest key expires; so is
    /// a new key of a holder that has `limits.per_holder` keys already while the index is at
    /// least half full, until that holder's oldest key expires. A client alone may use half
    /// the index; once others need room, no one holds more than their share. Clients without
    /// a caller identity hold at most `limits.unauthenticated` together, so no number of
    /// addresses takes the room of authenticated callers.
    pub(crate) fn claim(
        &mut self,
        claim: &KeyClaim,
        limits: &KeyLimits,
    ) -> Result<ClaimOutcome, StoreError> {
        let now = Instant::now();
        self.expire(now);
        let key = self
            .held(claim)
            .ok_or(StoreError::CapacityExceeded("idempotency key length"))?;
        if let Some((held, _)) = self.entries.get_key_value(&key) {
            return Ok(held.outcome_for(claim));
        }
        let KeyLimits {
            ttl,
            max,
            per_holder,
            unauthenticated: max_unauthenticated,
        } = *limits;
        if self.entries.len() >= max {
            let room_at = self
                .entries
                .front()
                .map_or(now, |(_, held)| held.expires_at);
            return Err(StoreError::FullUntil {
                what: "idempotency keys",
                retry_after: room_at.saturating_duration_since(now),
            });
        }
        let unauthenticated = !authenticated(claim.charged_to.as_deref());
        if unauthenticated && self.unauthenticated >= max_unauthenticated {
            let room_at = self
                .entries
                .values()
                .find(|held| !authenticated(held.charged_to.as_deref()))
                .map_or(now, |held| held.expires_at);
            return Err(StoreError::FullUntil {
                what: "idempotency keys of unauthenticated clients",
                retry_after: room_at.saturating_duration_since(now),
            });
        }
        let crowded = self.entries.len() >= max / 2;
        let charged_to = match claim.charged_to.as_deref() {
            None => None,
            Some(name) => Some(self.charge(name, per_holder, crowded, now)?),
        };
        self.entries.insert(
            key,
            Held {
                expires_at: now + ttl,
                charged_to,
            },
        );
        self.unauthenticated += usize::from(unauthenticated);
        Ok(ClaimOutcome::Claimed)
    }

    /// Drops the keys expired by `now`.
    pub(crate) fn expire(&mut self, now: Instant) {
        while self
            .entries
            .front()
            .is_some_and(|(_, held)| held.expires_at <= now)
        {
            if let Some((_, held)) = self.entries.pop_front() {
                self.forget(held.charged_to.as_deref());
            }
        }
    }

    /// Counts one more key against `name`, or refuses it at the quota when the index is
    /// `crowded`.
    fn charge(
        &mut self,
        name: &str,
        per_holder: usize,
        crowded: bool,
        now: Instant,
    ) -> Result<Arc<str>, StoreError> {
        let shared = match self.holders.get_key_value(name) {
            Some((shared, _)) => Arc::clone(shared),
            None => {
                let shared: Arc<str> = Arc::from(name);
                let fresh = Holder {
                    held: 0,
                    room_at: None,
                };
                self.holders.insert(Arc::clone(&shared), fresh);
                shared
            }
        };
        let Some(holder) = self.holders.get_mut(name) else {
            return Err(StoreError::Corrupt("a key holder vanished".into()));
        };
        if holder.held < per_holder || !crowded {
            holder.held += 1;
            return Ok(shared);
        }
        let room_at = match holder.room_at {
            Some(at) if at > now => at,
            _ => {
                let at = self
                    .entries
                    .values()
                    .find(|held| held.charged_to.as_deref() == Some(name))
                    .map_or(now, |held| held.expires_at);
                holder.room_at = Some(at);
                at
            }
        };
        Err(StoreError::FullUntil {
            what: "idempotency keys held by this caller",
            retry_after: room_at.saturating_duration_since(now),
        })
    }

    /// One key fewer against `name`; a holder with none left is dropped.
    fn forget(&mut self, name: Option<&str>) {
        if !authenticated(name) {
            self.unauthenticated = self.unauthenticated.saturating_sub(1);
        }
        let Some(name) = name else {
            return;
        };
        if let Some(holder) = self.holders.get_mut(name) {
            holder.held = holder.held.saturating_sub(1);
            holder.room_at = None;
            if holder.held == 0 {
                self.holders.remove(name);
            }
        }
    }

    /// Frees `claim`'s key if it is still held for `claim`'s task.
    pub(crate) fn release(&mut self, claim: &KeyClaim) {
        let Some(key) = self.held(claim) else {
            return;
        };
        let ours = self
            .entries
            .get_key_value(&key)
            .is_some_and(|(held, _)| held.task_id() == claim.task_id.as_str());
        if ours && let Some(held) = self.entries.remove(&key) {
            self.forget(held.charged_to.as_deref());
        }
    }

    /// When the key taken last expires, if any is held.
    pub(crate) fn last_expiry(&self) -> Option<Instant> {
        self.entries.back().map(|(_, held)| held.expires_at)
    }

    /// How many keys are held (expired ones included until the next claim drops them).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Who holds `claim`'s key, if a live holder does; takes nothing.
    pub(crate) fn find(&self, claim: &KeyClaim) -> Option<ClaimOutcome> {
        let key = self.held(claim)?;
        let (held, entry) = self.entries.get_key_value(&key)?;
        if entry.expires_at <= Instant::now() {
            return None;
        }
        Some(held.outcome_for(claim))
    }

    /// `claim` as the index would hold it; `None` for parts too long to record.
    fn held(&self, claim: &KeyClaim) -> Option<HeldKey> {
        let mut text = scoped_text(
            claim,
            claim.task_id.as_str().len() + claim.message_id.as_str().len(),
        );
        let scope_len = u32::try_from(text.len()).ok()?;
        let hash = self.hasher.hash_one(text.as_str());
        text.push_str(claim.task_id.as_str());
        let task_end = u32::try_from(text.len()).ok()?;
        text.push_str(claim.message_id.as_str());
        Some(HeldKey {
            hash,
            scope_len,
            task_end,
            text: text.into_boxed_str(),
        })
    }
}

/// A held key, in one allocation: its scoped text (tenant, caller, key), then the id of the
/// task it created and of the message that created it. Only the scoped text identifies it;
/// its hash is kept so the index never computes it twice.
struct HeldKey {
    hash: u64,
    scope_len: u32,
    task_end: u32,
    text: Box<str>,
}

impl HeldKey {
    fn scope(&self) -> &str {
        self.text.get(..self.scope_len as usize).unwrap_or("")
    }

    fn task_id(&self) -> &str {
        self.text
            .get(self.scope_len as usize..self.task_end as usize)
            .unwrap_or("")
    }

    fn message_id(&self) -> &str {
        self.text.get(self.task_end as usize..).unwrap_or("")
    }

    /// What a claim of this held key gets: a replay for the same message, else a conflict.
    fn outcome_for(&self, claim: &KeyClaim) -> ClaimOutcome {
        if self.message_id() == claim.message_id.as_str() {
            ClaimOutcome::Replay(TaskId::new(self.task_id()))
        } else {
            ClaimOutcome::Conflict
        }
    }
}

impl Hash for HeldKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PartialEq for HeldKey {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.scope() == other.scope()
    }
}

impl Eq for HeldKey {}

/// Hands the index the hash a [`HeldKey`] carries (already SipHash), computing nothing.
#[derive(Default)]
struct StoredHash(u64);

impl Hasher for StoredHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is ever called, by `HeldKey::hash`; fold anything else in anyway.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
    }
}

/// A claim's tenant, caller and key in one string, each part length-prefixed where another
/// follows it, so no two scopes can run together into one text; with room for `more` bytes.
/// Built by hand: it is made on every keyed send.
fn scoped_text(claim: &KeyClaim, more: usize) -> String {
    let tenant = &claim.scope.tenant;
    let caller = claim.scope.caller.as_deref();
    let mut text = String::with_capacity(
        tenant.len() + caller.map_or(0, str::len) + claim.key.as_str().len() + 24 + more,
    );
    push_len(&mut text, tenant.len());
    text.push(':');
    text.push_str(tenant);
    match caller {
        Some(caller) => {
            push_len(&mut text, caller.len());
            text.push(':');
            text.push_str(caller);
        }
        None => text.push('-'),
    }
    text.push_str(claim.key.as_str());
    text
}

fn push_len(out: &mut String, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::KeyScope;

    const DAY: Duration = Duration::from_secs(86_400);

    /// Limits with no separate share for unauthenticated clients.
    fn limits(ttl: Duration, max: usize, per_holder: usize) -> KeyLimits {
        KeyLimits {
            ttl,
            max,
            per_holder,
            unauthenticated: max,
        }
    }

    fn claim(tenant: &str, caller: Option<&str>) -> KeyClaim {
        KeyClaim {
            scope: KeyScope {
                tenant: tenant.into(),
                caller: caller.map(Into::into),
            },
            key: "k".repeat(16).parse().expect("a valid key"),
            message_id: "m".into(),
            task_id: "t".into(),
            charged_to: None,
        }
    }

    #[test]
    fn client_chosen_keys_are_hashed_with_seeded_siphash() {
        // A hash clients could learn to collide would let them slow every claim.
        assert_eq!(
            std::any::type_name::<KeyHasher>(),
            std::any::type_name::<std::hash::RandomState>()
        );
    }

    fn scoped_text_of(claim: &KeyClaim) -> String {
        scoped_text(claim, 0)
    }

    #[test]
    fn scoped_texts_prefix_each_scope_part_with_its_length() {
        let key = "k".repeat(16);
        assert_eq!(&*scoped_text_of(&claim("", None)), format!("0:-{key}"));
        assert_eq!(
            &*scoped_text_of(&claim("acme", None)),
            format!("4:acme-{key}")
        );
        assert_eq!(
            &*scoped_text_of(&claim("acme", Some("alice"))),
            format!("4:acme5:alice{key}")
        );
        let long = "t".repeat(1234);
        assert!(scoped_text_of(&claim(&long, None)).starts_with("1234:"));
        // Parts cannot run together: moving a character between tenant and caller changes it.
        assert_ne!(
            scoped_text_of(&claim("ab", Some("c"))),
            scoped_text_of(&claim("a", Some("bc")))
        );
    }

    #[test]
    fn keys_found_again_after_the_index_grows_many_times() {
        // Growth moves keys by their stored hash; every key must still be found.
        let mut index = KeyIndex::new();
        let claims: Vec<KeyClaim> = (0..5_000)
            .map(|i| KeyClaim {
                key: format!("key-{i:012}").parse().expect("a valid key"),
                message_id: format!("m-{i}").into(),
                task_id: format!("t-{i}").into(),
                ..claim("", None)
            })
            .collect();
        for c in &claims {
            assert_eq!(
                index
                    .claim(c, &limits(DAY, usize::MAX, usize::MAX))
                    .expect("room"),
                ClaimOutcome::Claimed
            );
        }
        for c in &claims {
            assert_eq!(
                index
                    .claim(c, &limits(DAY, usize::MAX, usize::MAX))
                    .expect("room"),
                ClaimOutcome::Replay(c.task_id.clone())
            );
        }
        assert_eq!(index.len(), claims.len());
    }

    #[test]
    fn a_held_key_answers_with_its_own_task_and_message() {
        let mut index = KeyIndex::new();
        let first = KeyClaim {
            task_id: "task-a".into(),
            message_id: "message-a".into(),
            ..claim("acme", Some("alice"))
        };
        assert_eq!(
            index.claim(&first, &limits(DAY, 10, 10)).ok(),
            Some(ClaimOutcome::Claimed)
        );
        let retry = KeyClaim {
            task_id: "task-b".into(),
            ..first.clone()
        };
        assert_eq!(
            index.claim(&retry, &limits(DAY, 10, 10)).ok(),
            Some(ClaimOutcome::Replay("task-a".into()))
        );
        let other = KeyClaim {
            message_id: "message-b".into(),
            ..retry.clone()
        };
        assert_eq!(
            index.claim(&other, &limits(DAY, 10, 10)).ok(),
            Some(ClaimOutcome::Conflict)
        );
        // Only the holder's task frees it.
        index.release(&retry);
        assert_eq!(index.len(), 1);
        index.release(&first);
        assert_eq!(index.len(), 0);
    }

    #[test]
    fn scopes_do_not_share_a_key() {
        let mut index = KeyIndex::new();
        let a = claim("a", None);
        let b = KeyClaim {
            task_id: "t-b".into(),
            ..claim("b", None)
        };
        assert_eq!(
            index.claim(&a, &limits(DAY, 10, 10)).ok(),
            Some(ClaimOutcome::Claimed)
        );
        assert_eq!(
            index.claim(&b, &limits(DAY, 10, 10)).ok(),
            Some(ClaimOutcome::Claimed)
        );
        index.release(&a);
        assert_eq!(index.len(), 1);
        assert_eq!(
            index.claim(&b, &limits(DAY, 10, 10)).ok(),
            Some(ClaimOutcome::Replay("t-b".into()))
        );
    }

    #[test]
    fn a_holder_at_its_quota_gets_room_back_as_its_keys_go() {
        let of = |holder: Option<&str>, key: char, task: &str| KeyClaim {
            key: key.to_string().repeat(16).parse().expect("a valid key"),
            task_id: task.into(),
            charged_to: holder.map(Into::into),
            ..claim("", None)
        };
        let claimed = |index: &mut KeyIndex, claim: &KeyClaim, max: usize| {
            index.claim(claim, &limits(DAY, max, 2)).ok() == Some(ClaimOutcome::Claimed)
        };
        // Alone in a roomy index, a holder may pass its share.
        let mut roomy = KeyIndex::new();
        for (i, key) in ['a', 'b', 'c'].into_iter().enumerate() {
            assert!(claimed(
                &mut roomy,
                &of(Some("alice"), key, &format!("t{i}")),
                100
            ));
        }
        // Half full (3 of 6), a holder with its two keys is refused until its oldest expires.
        let mut index = KeyIndex::new();
        assert!(claimed(&mut index, &of(Some("bob"), 'a', "t0"), 6));
        assert!(claimed(&mut index, &of(Some("alice"), 'b', "t1"), 6));
        assert!(claimed(&mut index, &of(Some("alice"), 'c', "t2"), 6));
        let third = of(Some("alice"), 'd', "t3");
        match index.claim(&third, &limits(DAY, 6, 2)) {
            Err(StoreError::FullUntil { what, retry_after }) => {
                assert_eq!(what, "idempotency keys held by this caller");
                assert!(
                    retry_after > DAY - Duration::from_secs(60),
                    "{retry_after:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        // A retry of a held key still replays; others below their share still claim.
        assert!(matches!(
            index.claim(&of(Some("alice"), 'b', "t1"), &limits(DAY, 6, 2)),
            Ok(ClaimOutcome::Replay(_))
        ));
        assert!(claimed(&mut index, &of(Some("bob"), 'e', "t4"), 6));
        assert!(claimed(&mut index, &of(None, 'f', "t5"), 6));
        // Released, a key makes room for its holder.
        index.release(&of(Some("alice"), 'c', "t2"));
        assert!(claimed(&mut index, &third, 6));
        // Expired, a key leaves its holder's count.
        let mut brief = KeyIndex::new();
        assert!(
            brief
                .claim(&of(Some("carol"), 'g', "t6"), &limits(Duration::ZERO, 2, 1))
                .is_ok()
        );
        assert!(claimed(&mut brief, &of(Some("carol"), 'h', "t7"), 2));
        assert_eq!(brief.holders.get("carol").map(|h| h.held), Some(1));
    }

    #[test]
    fn unauthenticated_clients_share_their_part_and_leave_callers_theirs() {
        let of = |holder: Option<&str>, key: usize| KeyClaim {
            key: format!("key-{key:012}").parse().expect("a valid key"),
            task_id: format!("t{key}").into(),
            charged_to: holder.map(Into::into),
            ..claim("", None)
        };
        let limits = KeyLimits {
            unauthenticated: 4,
            ..limits(DAY, 8, 8)
        };
        let mut index = KeyIndex::new();
        let networks = ["network:10.0.1.0/24", "network:10.0.2.0/24"];
        for (i, network) in networks.iter().cycle().take(4).enumerate() {
            assert!(index.claim(&of(Some(network), i), &limits).is_ok());
        }
        for (i, holder) in [Some("network:10.0.3.0/24"), None].into_iter().enumerate() {
            match index.claim(&of(holder, 10 + i), &limits) {
                Err(StoreError::FullUntil { what, retry_after }) => {
                    assert_eq!(what, "idempotency keys of unauthenticated clients");
                    assert!(retry_after > DAY - Duration::from_secs(60));
                }
                other => panic!("{other:?}"),
            }
        }
        for i in 0..4 {
            let caller = format!("caller:user-{i}");
            assert!(index.claim(&of(Some(&caller), 20 + i), &limits).is_ok());
        }
        // A released key of theirs makes room for another unauthenticated client.
        index.release(&of(Some(networks[0]), 0));
        assert!(index.claim(&of(None, 30), &limits).is_ok());
    }
}
