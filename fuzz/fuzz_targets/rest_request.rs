//! Fuzz target `rest_request`: see `a2a_integration_tests::fuzz::rest_request` for what it checks.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    a2a_integration_tests::fuzz::rest_request(data);
});
