//! Who a call comes from, as the runtime records it on the decisions the
//! call makes ([`Decider`]): the caller's name as the door found it (the
//! name of its API key, or the subject of its client certificate); and
//! the surface. A gRPC call's surface is gRPC, or
//! gRPC-Web when `server/web.rs` marked it so ([`Transport`]), or the inbox
//! when that gRPC-Web call carries [`CLIENT_HEADER`]` = inbox`. The other
//! surfaces (A2A, MCP, AG-UI) name their own and take the name from here.

use tonic::Request;

use crate::domain::{Decider, DecisionSource};

pub use crate::door::CLIENT_HEADER;

/// [`CLIENT_HEADER`]'s value on the inbox's calls.
pub const INBOX: &str = "inbox";

/// How a gRPC call reached the server, when not as plain gRPC: put in the
/// request's extensions in front of gRPC-Web's translation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    GrpcWeb,
    /// gRPC-Web from the inbox (see [`CLIENT_HEADER`]).
    Inbox,
}

impl Transport {
    /// The transport of an HTTP request with these headers: gRPC-Web by
    /// its content type, the inbox's by [`CLIENT_HEADER`]; `None` for
    /// anything else.
    pub fn of(headers: &tonic::codegen::http::HeaderMap) -> Option<Self> {
        let grpc_web = headers
            .get(tonic::codegen::http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("application/grpc-web"));
        if !grpc_web {
            return None;
        }
        let inbox = headers
            .get(CLIENT_HEADER)
            .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(INBOX.as_bytes()));
        Some(if inbox {
            Transport::Inbox
        } else {
            Transport::GrpcWeb
        })
    }
}

pub use crate::door::{caller_name, CallerName};

/// Who makes an agentd.v1 call, through gRPC, gRPC-Web or the inbox.
pub fn decider_of<T>(request: &Request<T>) -> Decider {
    let source = match request.extensions().get::<Transport>() {
        None => DecisionSource::Grpc,
        Some(Transport::GrpcWeb) => DecisionSource::GrpcWeb,
        Some(Transport::Inbox) => DecisionSource::Inbox,
    };
    Decider::new(caller_name(request.extensions()), source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_web_and_the_inbox_are_told_apart() {
        let mut headers = tonic::codegen::http::HeaderMap::new();
        assert_eq!(Transport::of(&headers), None);
        headers.insert(
            tonic::codegen::http::header::CONTENT_TYPE,
            "application/grpc".parse().unwrap(),
        );
        assert_eq!(Transport::of(&headers), None);
        headers.insert(
            tonic::codegen::http::header::CONTENT_TYPE,
            "application/grpc-web+proto".parse().unwrap(),
        );
        assert_eq!(Transport::of(&headers), Some(Transport::GrpcWeb));
        headers.insert(CLIENT_HEADER, "inbox".parse().unwrap());
        assert_eq!(Transport::of(&headers), Some(Transport::Inbox));
    }
}
