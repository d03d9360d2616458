//! Fuzz target: ask_user input validation (the JSON arguments a model sends). The properties live in `agentd_fuzz::check_ask_user_args`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentd_fuzz::check_ask_user_args(data));
