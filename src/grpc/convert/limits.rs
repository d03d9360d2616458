//! The request limits that can be checked on the wire message itself,
//! before it is converted, so the error names the field the caller sent
//! (`prompt` or `messages`, `options.max_steps`). The runtime checks the
//! same limits again for callers of the library.

use crate::limits::Limits;
use crate::pb;
use crate::runtime::RuntimeError;

/// Checks a StreamAgent request against the conversation and step limits.
pub fn check_start_request(limits: &Limits, request: &pb::StreamAgentRequest) -> Result<(), RuntimeError> {
    if request.messages.is_empty() {
        limits.check_conversation("prompt", std::iter::once(request.prompt.as_str()))?;
    } else {
        let contents = request.messages.iter().map(|message| message.content.as_str());
        limits.check_conversation("messages", contents)?;
    }
    let max_steps = request.options.as_ref().map_or(0, |options| options.max_steps);
    limits.check_max_steps(max_steps)?;
    Ok(())
}
