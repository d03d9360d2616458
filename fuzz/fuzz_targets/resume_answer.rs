//! Fuzz target: validation of Resume answers against pending calls. The properties live in `agentd_fuzz::check_resume_answer`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentd_fuzz::check_resume_answer(data));
