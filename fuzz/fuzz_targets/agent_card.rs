//! Fuzz target `agent_card`: see `a2a_integration_tests::fuzz::agent_card` for what it checks.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    a2a_integration_tests::fuzz::agent_card(data);
});
