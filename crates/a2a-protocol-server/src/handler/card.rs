//! The card's capabilities, derived from what the handler can actually do, so the card and
//! the behaviour cannot drift.

use a2a_protocol_types::AgentCard;
use a2a_protocol_types::extensions::AgentExtension;
use a2a_protocol_types::idempotency::IDEMPOTENCY_EXTENSION_URI;

use crate::store::TaskStore;

pub(super) fn derive(mut card: AgentCard, store: &dyn TaskStore, extended: bool) -> AgentCard {
    let capabilities = &mut card.capabilities;
    capabilities.streaming = Some(true);
    capabilities.push_notifications = Some(false);
    capabilities.extended_agent_card = Some(extended);
    let mut extensions = capabilities.extensions.take().unwrap_or_default();
    extensions.retain(|e| e.uri != IDEMPOTENCY_EXTENSION_URI);
    if store.supports_idempotency() {
        extensions.push(
            AgentExtension::new(IDEMPOTENCY_EXTENSION_URI).with_description(
                "Deduplicates sends that carry metadata[\"a2a-rust.com/idempotency-key\"]: a retry \
                 returns the task the first attempt created, and the agent runs once.",
            ),
        );
    }
    capabilities.extensions = (!extensions.is_empty()).then_some(extensions);
    card
}
