//! Fuzz target `sse_parsing`: see `a2a_integration_tests::fuzz::sse_parsing` for what it checks.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    a2a_integration_tests::fuzz::sse_parsing(data);
});
