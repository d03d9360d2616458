//! Proto <-> domain conversions, one module per message family. Malformed
//! input becomes `RuntimeError::InvalidRequest` naming the field.

mod chunk;
mod decision;
mod grant;
mod limits;
mod list;
mod message;
mod request;
mod run;
mod run_event;
mod thread;
mod tools;
mod trace;
mod value;

pub(crate) use chunk::event_to_proto;
pub(crate) use grant::grants_to_proto;
pub use limits::check_start_request;
pub(crate) use list::{list_runs_request, run_page_to_proto};
pub(crate) use request::{parse_run_id, parse_thread_id};
pub use request::{resume_request, start_request};
pub(crate) use run::{agent_to_proto, run_to_proto, run_with_messages_to_proto};
pub(crate) use run_event::{run_event_to_proto, watch_runs_request};
pub(crate) use thread::{list_threads_request, thread_page_to_proto, thread_to_proto};
pub use trace::trace_context;
pub use value::{json_to_struct, struct_to_json, timestamp};
pub(crate) use value::{json_to_value, value_to_json};

use crate::runtime::RuntimeError;

/// A request field that does not hold what it must.
pub fn invalid(field: &'static str, reason: impl Into<String>) -> RuntimeError {
    RuntimeError::InvalidRequest {
        field,
        reason: reason.into(),
    }
}

/// A list RPC's `page_token`: none for the first page (empty), else the
/// cursor `parse` reads from what follows the version `prefix`. Anything
/// else is refused as not a token `rpc` returned.
fn parse_page_token<T>(
    token: &str,
    prefix: &str,
    rpc: &str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, RuntimeError> {
    if token.is_empty() {
        return Ok(None);
    }
    token
        .strip_prefix(prefix)
        .and_then(parse)
        .map(Some)
        .ok_or_else(|| invalid("page_token", format!("not a next_page_token returned by {rpc}")))
}

/// Asserts that `token` was refused as a malformed page token.
#[cfg(test)]
fn assert_refused_page_token<T: std::fmt::Debug>(token: &str, parsed: Result<T, RuntimeError>) {
    let error = parsed.expect_err(token);
    assert!(
        matches!(
            error,
            RuntimeError::InvalidRequest {
                field: "page_token",
                ..
            }
        ),
        "{token}: {error:?}"
    );
}
