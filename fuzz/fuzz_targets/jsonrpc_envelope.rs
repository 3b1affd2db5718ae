//! Fuzz target `jsonrpc_envelope`: see `a2a_integration_tests::fuzz::jsonrpc_envelope` for what it checks.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    a2a_integration_tests::fuzz::jsonrpc_envelope(data);
});
