#![no_main]
// See agora_fuzz::merge_event for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_fuzz::merge_event(data));
