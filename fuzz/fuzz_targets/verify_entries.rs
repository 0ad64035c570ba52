#![no_main]
// See agora_fuzz::verify_entries for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_fuzz::verify_entries(data));
