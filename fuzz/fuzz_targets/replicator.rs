#![no_main]
// See agora_fuzz::replicator for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_fuzz::replicator(data));
