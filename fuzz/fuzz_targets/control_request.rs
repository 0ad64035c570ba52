#![no_main]
// See agora_fuzz::control_request for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_fuzz::control_request(data));
