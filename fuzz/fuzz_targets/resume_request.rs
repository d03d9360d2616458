//! Fuzz target: decoding and conversion of ResumeRequest. The properties live in `agentd_fuzz::check_resume_request`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentd_fuzz::check_resume_request(data));
