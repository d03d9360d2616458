//! The redirect policy of every client of operator-configured URLs (model
//! providers, HTTP tools, MCP servers, webhooks): a redirect within the
//! configured URL's origin (scheme, host and port) may be followed; one to
//! another origin is refused with an error that names that origin, so the
//! request and its configured headers (API keys among them) never leave
//! the origin the operator wrote.

use reqwest::redirect::{Attempt, Policy};
use reqwest::StatusCode;

/// Redirects followed at most in a row.
const MAX_REDIRECTS: usize = 10;

/// Which same-origin redirects are followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    /// Any: a 301, 302 or 303 after a POST is followed as a GET, as
    /// browsers do (HTTP tools, whose requests are the tool's answer).
    Any,
    /// 307 and 308 only, which keep the method and body; another stops
    /// and is answered as it came (deliveries and protocol messages, whose
    /// body must arrive as sent).
    KeepingTheBody,
}

/// The policy: same-origin redirects as `follow` says, at most
/// [`MAX_REDIRECTS`]; none to another origin.
pub fn within_origin(follow: Follow) -> Policy {
    Policy::custom(move |attempt| decide(follow, attempt))
}

fn decide(follow: Follow, attempt: Attempt<'_>) -> reqwest::redirect::Action {
    let Some(origin) = attempt.previous().first().map(reqwest::Url::origin) else {
        return attempt.stop();
    };
    let target = attempt.url().origin();
    if target != origin {
        let error = format!(
            "a redirect to another origin ({}) is not followed",
            target.ascii_serialization()
        );
        return attempt.error(error);
    }
    let keeps_body = matches!(
        attempt.status(),
        StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
    );
    if follow == Follow::KeepingTheBody && !keeps_body {
        attempt.stop()
    } else if attempt.previous().len() > MAX_REDIRECTS {
        attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
    } else {
        attempt.follow()
    }
}

/// Why a request ended at a redirect, if it did: the policy's reason
/// (reqwest's own message says only "error following redirect").
pub fn refusal(error: &reqwest::Error) -> Option<String> {
    if !error.is_redirect() {
        return None;
    }
    let reason = std::error::Error::source(error).map_or_else(|| error.to_string(), ToString::to_string);
    Some(reason)
}
