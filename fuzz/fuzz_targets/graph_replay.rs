#![no_main]
// See agora_fuzz::graph_replay for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_fuzz::graph_replay(data));
