//! Fuzz target: decoding, limits and conversion of StreamAgentRequest. The properties live in `agentd_fuzz::check_stream_agent_request`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentd_fuzz::check_stream_agent_request(data));
