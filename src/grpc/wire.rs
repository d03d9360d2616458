//! Precise statuses for requests that fail before any handler sees them.
//! tonic answers a request over the size limit with OUT_OF_RANGE, one
//! that is not valid protobuf (bad UTF-8 in a string, nesting deeper than
//! protobuf allows) with INTERNAL, and so too a request whose body ends
//! inside a gRPC frame (a truncated message) or carries no message at all;
//! each is the caller's fault, so this wrapper turns them into
//! RESOURCE_EXHAUSTED naming `limits.max_request_bytes` and
//! INVALID_ARGUMENT. Everything else passes through untouched.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codegen::http;
use tonic::codegen::Service;
use tonic::server::NamedService;
use tonic::{Code, Status};
use tonic_types::StatusExt;

use super::status::{bad_request, info};

/// What tonic says when a request is over `max_decoding_message_size`.
const TOO_LARGE: &str = "Error, decoded message length too large: found ";
/// What tonic says when prost cannot decode a request.
const UNDECODABLE: &str = "failed to decode Protobuf message";
/// What tonic says when a request body ends inside a length-prefixed
/// message.
const TRUNCATED: &str = "Unexpected EOF decoding stream.";
/// What tonic says when a request's body has no message, or only a
/// frame header.
const NO_MESSAGE: &str = "Missing request message.";

/// Wraps a tonic service, rewriting the statuses of undecodable requests.
#[derive(Clone, Debug)]
pub(crate) struct WireErrors<S> {
    inner: S,
    max_request_bytes: usize,
}

impl<S> WireErrors<S> {
    pub(crate) fn new(inner: S, max_request_bytes: usize) -> Self {
        Self {
            inner,
            max_request_bytes,
        }
    }
}

impl<S: NamedService> NamedService for WireErrors<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<http::Request<Body>> for WireErrors<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let limit = self.max_request_bytes;
        let responding = self.inner.call(request);
        Box::pin(async move {
            let response = responding.await?;
            let rewritten =
                Status::from_header_map(response.headers()).and_then(|status| rewrite(&status, limit));
            Ok(match rewritten {
                Some(status) => status.into_http(),
                None => response,
            })
        })
    }
}

/// The status to answer instead of `status`, if it is one to rewrite.
fn rewrite(status: &Status, limit: usize) -> Option<Status> {
    match status.code() {
        Code::OutOfRange => {
            let found = status.message().strip_prefix(TOO_LARGE)?;
            let size: String = found.chars().take_while(char::is_ascii_digit).collect();
            Some(too_large(&size, limit))
        }
        Code::Internal if status.message().starts_with(UNDECODABLE) => Some(malformed(format!(
            "the request is not a valid message: {}",
            status.message()
        ))),
        Code::Internal if status.message() == TRUNCATED => Some(malformed(
            "the request ends inside a message: its gRPC frame is shorter than its length prefix says"
                .to_owned(),
        )),
        Code::Internal if status.message() == NO_MESSAGE => Some(malformed(
            "the request has no message, or only the header of one: a call sends exactly one".to_owned(),
        )),
        _ => None,
    }
}

fn malformed(message: String) -> Status {
    let details = bad_request("request", &message, "MALFORMED_REQUEST", &[]);
    Status::with_error_details(Code::InvalidArgument, message, details)
}

fn too_large(size: &str, limit: usize) -> Status {
    let details = info(
        "REQUEST_TOO_LARGE",
        &[
            ("limit", "max_request_bytes".to_owned()),
            ("max", limit.to_string()),
            ("actual", size.to_owned()),
        ],
    );
    Status::with_error_details(
        Code::ResourceExhausted,
        format!("the request has {size} bytes, over the limit of {limit} (limits.max_request_bytes)"),
        details,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_only_decoding_failures() {
        let big = Status::out_of_range(format!("{TOO_LARGE}2000 bytes, the limit is: 1000 bytes"));
        let rewritten = rewrite(&big, 1000).unwrap();
        assert_eq!(rewritten.code(), Code::ResourceExhausted);
        assert!(
            rewritten.message().contains("limits.max_request_bytes"),
            "{rewritten:?}"
        );
        assert_eq!(
            rewritten
                .get_details_error_info()
                .unwrap()
                .metadata
                .get("actual")
                .map(String::as_str),
            Some("2000")
        );
        let garbled = Status::internal(format!(
            "{UNDECODABLE}: invalid string value: data is not UTF-8 encoded"
        ));
        assert_eq!(rewrite(&garbled, 1000).unwrap().code(), Code::InvalidArgument);
        for cut in [TRUNCATED, NO_MESSAGE] {
            let rewritten = rewrite(&Status::internal(cut), 1000).unwrap();
            assert_eq!(rewritten.code(), Code::InvalidArgument);
            assert_eq!(
                rewritten.get_details_error_info().unwrap().reason,
                "MALFORMED_REQUEST"
            );
        }
        assert!(rewrite(&Status::internal("store exploded"), 1000).is_none());
        assert!(rewrite(&Status::out_of_range("other"), 1000).is_none());
    }
}
