#![no_main]
// See agora_fuzz::fork_proof for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_fuzz::fork_proof(data));
