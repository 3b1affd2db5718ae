//! What a store answers when a push notification config is saved.

/// The outcome of [`PushStore::save_push_config`](super::PushStore::save_push_config).
///
/// ```
/// use a2a_protocol_server::store::PushConfigSaved;
///
/// assert_ne!(PushConfigSaved::Saved, PushConfigSaved::AtCap);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushConfigSaved {
    /// The config is stored (new, or in place of the task's config with the same id).
    Saved,
    /// There is no such task (in this tenant, for a tenant-aware store): nothing was stored.
    TaskMissing,
    /// The config is new and the task already has as many configs as it may: nothing was
    /// stored.
    AtCap,
}
