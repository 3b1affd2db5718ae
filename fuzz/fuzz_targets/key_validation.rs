//! Fuzz target `key_validation`: see `a2a_integration_tests::fuzz::key_validation` for what it checks.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    a2a_integration_tests::fuzz::key_validation(data);
});
