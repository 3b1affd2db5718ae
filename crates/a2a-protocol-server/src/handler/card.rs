//! The agent's cards, and their capabilities derived from what the handler can actually do,
//! so the card and the behaviour cannot drift.

use a2a_protocol_types::AgentCard;
use a2a_protocol_types::budget::BUDGET_EXTENSION_URI;
use a2a_protocol_types::extensions::AgentExtension;
use a2a_protocol_types::idempotency::IDEMPOTENCY_EXTENSION_URI;
use a2a_protocol_types::lease::LEASE_EXTENSION_URI;

use crate::store::TaskStore;

/// Tailors the extended card to the authenticated caller who reads it.
pub(crate) type ExtendedCardTailor =
    std::sync::Arc<dyn Fn(&crate::CallerIdentity, AgentCard) -> AgentCard + Send + Sync>;

/// The cards the agent serves.
pub(crate) struct Cards {
    /// The public card.
    pub(crate) public: AgentCard,
    /// The card for authenticated callers, when there is one.
    pub(crate) extended: Option<AgentCard>,
    /// Tailors the extended card to its reader.
    pub(crate) tailor: Option<ExtendedCardTailor>,
}

pub(super) fn derive(
    mut card: AgentCard,
    store: &dyn TaskStore,
    extended: bool,
    leases: bool,
    pushes: bool,
) -> AgentCard {
    let capabilities = &mut card.capabilities;
    capabilities.streaming = Some(true);
    capabilities.push_notifications = Some(pushes);
    capabilities.extended_agent_card = Some(extended);
    let mut extensions = capabilities.extensions.take().unwrap_or_default();
    let ours = [
        IDEMPOTENCY_EXTENSION_URI,
        LEASE_EXTENSION_URI,
        BUDGET_EXTENSION_URI,
    ];
    extensions.retain(|e| !ours.contains(&e.uri.as_str()));
    if store.supports_idempotency() {
        extensions.push(
            AgentExtension::new(IDEMPOTENCY_EXTENSION_URI).with_description(
                "Deduplicates sends that carry metadata[\"a2a-rust.com/idempotency-key\"]: a retry \
                 returns the task the first attempt created, and the agent runs once.",
            ),
        );
    }
    if leases {
        extensions.push(AgentExtension::new(LEASE_EXTENSION_URI).with_description(
            "Cancels a task started with metadata[\"a2a-rust.com/lease\"] = {\"ttlMs\": N} when no \
             GetTask activating this extension renews it within N ms.",
        ));
    }
    extensions.push(AgentExtension::new(BUDGET_EXTENSION_URI).with_description(
        "Bounds a turn by the time granted in metadata[\"a2a-rust.com/budget\"] and reports what \
         is left and spent in status-update metadata.",
    ));
    capabilities.extensions = Some(extensions);
    card
}
