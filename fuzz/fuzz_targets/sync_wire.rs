#![no_main]
// See agora_fuzz::sync_wire for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_fuzz::sync_wire(data));
