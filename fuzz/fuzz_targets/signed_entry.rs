#![no_main]
// See agora_fuzz::signed_entry for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_fuzz::signed_entry(data));
