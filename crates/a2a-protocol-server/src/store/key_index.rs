//! The in-memory index of idempotency keys: which task and message each held key belongs to,
//! oldest first, so expiry pops from the front and costs time proportional to what expires.
//!
//! Keys are chosen by clients, so the index hashes them with std's seeded SipHash, built to
//! resist inputs crafted to collide; a hash an attacker could learn to collide would turn each
//! claim into a scan of every held key. Each key is hashed once, when it is claimed, and keeps
//! its hash, so growing the index moves keys without hashing them again.

use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher, RandomState};
use std::time::{Duration, Instant};

use a2a_protocol_types::TaskId;
use hashlink::LinkedHashMap;
use hashlink::linked_hash_map::Entry;

use super::{ClaimOutcome, KeyClaim, StoreError};

/// The hash of a key's scoped text: SipHash with a per-process random key.
type KeyHasher = RandomState;

/// The keys held in one namespace.
pub(crate) struct KeyIndex {
    entries: LinkedHashMap<HeldKey, Instant, BuildHasherDefault<StoredHash>>,
    hasher: KeyHasher,
}

impl KeyIndex {
    pub(crate) fn new() -> Self {
        Self {
            entries: LinkedHashMap::default(),
            hasher: KeyHasher::new(),
        }
    }

    /// Claims `claim`'s key for its message and task, unless the key is held: then the answer
    /// is a replay (same message) or a conflict (another message). Expired keys are dropped
    /// first; a new key past `max` held is refused.
    pub(crate) fn claim(
        &mut self,
        claim: &KeyClaim,
        ttl: Duration,
        max: usize,
    ) -> Result<ClaimOutcome, StoreError> {
        let now = Instant::now();
        while self
            .entries
            .front()
            .is_some_and(|(_, expires_at)| *expires_at <= now)
        {
            self.entries.pop_front();
        }
        let full = self.entries.len() >= max;
        let key = self
            .held(claim)
            .ok_or(StoreError::CapacityExceeded("idempotency key length"))?;
        let slot = match self.entries.entry(key) {
            Entry::Occupied(held) => {
                let held = held.key();
                return Ok(if held.message_id() == claim.message_id.as_str() {
                    ClaimOutcome::Replay(TaskId::new(held.task_id()))
                } else {
                    ClaimOutcome::Conflict
                });
            }
            Entry::Vacant(slot) => slot,
        };
        if full {
            return Err(StoreError::CapacityExceeded("idempotency keys"));
        }
        slot.insert(now + ttl);
        Ok(ClaimOutcome::Claimed)
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
        if ours {
            self.entries.remove(&key);
        }
    }

    /// How many keys are held (expired ones included until the next claim drops them).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Who holds `claim`'s key, if a live holder does; takes nothing.
    pub(crate) fn find(&self, claim: &KeyClaim) -> Option<ClaimOutcome> {
        let key = self.held(claim)?;
        let (held, expires_at) = self.entries.get_key_value(&key)?;
        if *expires_at <= Instant::now() {
            return None;
        }
        Some(if held.message_id() == claim.message_id.as_str() {
            ClaimOutcome::Replay(TaskId::new(held.task_id()))
        } else {
            ClaimOutcome::Conflict
        })
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
        tenant.len() + caller.map_or(0, str::len) + claim.key.len() + 24 + more,
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
    text.push_str(&claim.key);
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

    fn claim(tenant: &str, caller: Option<&str>) -> KeyClaim {
        KeyClaim {
            scope: KeyScope {
                tenant: tenant.into(),
                caller: caller.map(Into::into),
            },
            key: "k".repeat(16),
            message_id: "m".into(),
            task_id: "t".into(),
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
                key: format!("key-{i:012}"),
                message_id: format!("m-{i}").into(),
                task_id: format!("t-{i}").into(),
                ..claim("", None)
            })
            .collect();
        for c in &claims {
            assert_eq!(
                index.claim(c, DAY, usize::MAX).expect("room"),
                ClaimOutcome::Claimed
            );
        }
        for c in &claims {
            assert_eq!(
                index.claim(c, DAY, usize::MAX).expect("room"),
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
            index.claim(&first, DAY, 10).ok(),
            Some(ClaimOutcome::Claimed)
        );
        let retry = KeyClaim {
            task_id: "task-b".into(),
            ..first.clone()
        };
        assert_eq!(
            index.claim(&retry, DAY, 10).ok(),
            Some(ClaimOutcome::Replay("task-a".into()))
        );
        let other = KeyClaim {
            message_id: "message-b".into(),
            ..retry.clone()
        };
        assert_eq!(
            index.claim(&other, DAY, 10).ok(),
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
        assert_eq!(index.claim(&a, DAY, 10).ok(), Some(ClaimOutcome::Claimed));
        assert_eq!(index.claim(&b, DAY, 10).ok(), Some(ClaimOutcome::Claimed));
        index.release(&a);
        assert_eq!(index.len(), 1);
        assert_eq!(
            index.claim(&b, DAY, 10).ok(),
            Some(ClaimOutcome::Replay("t-b".into()))
        );
    }
}
