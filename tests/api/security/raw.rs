//! A gRPC client that sends arbitrary bytes as the request message, so a
//! test can send what no generated client would: truncated or garbled
//! protobuf, invalid UTF-8 in string fields, nesting deeper than protobuf
//! allows. Answers come back as raw bytes too.

use bytes::{Buf, BufMut};
use tonic::client::Grpc;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::{Request, Status};

/// Passes bytes through in both directions.
#[derive(Clone, Copy, Default)]
pub(super) struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

/// Calls `method` of the agent service with `body` as the request; a
/// streaming method's stream is read to its end. The status the call ends
/// with (OK for a unary answer or a stream that ends well).
pub(super) async fn call(channel: Channel, method: &str, streaming: bool, body: Vec<u8>) -> Status {
    let mut grpc = Grpc::new(channel);
    if let Err(error) = grpc.ready().await {
        return Status::unavailable(format!("not ready: {error}"));
    }
    let path = match PathAndQuery::try_from(format!("/agentd.v1.AgentService/{method}")) {
        Ok(path) => path,
        Err(error) => return Status::internal(format!("bad path: {error}")),
    };
    let mut request = Request::new(body);
    request.set_timeout(std::time::Duration::from_secs(10));
    if !streaming {
        return match grpc.unary(request, path, RawCodec).await {
            Ok(_) => Status::ok(""),
            Err(status) => status,
        };
    }
    let mut stream = match grpc.server_streaming(request, path, RawCodec).await {
        Ok(response) => response.into_inner(),
        Err(status) => return status,
    };
    loop {
        match stream.message().await {
            Ok(Some(_)) => {}
            Ok(None) => return Status::ok(""),
            Err(status) => return status,
        }
    }
}

/// Calls `method` of the agent service with `body` as the whole HTTP/2
/// request body, gRPC framing included, so that a test can send a frame
/// whose length prefix promises more than follows. The status the call
/// ends with, from the response's headers or its trailers.
pub(super) async fn call_with_body(mut channel: Channel, method: &str, body: Vec<u8>) -> Status {
    use http_body_util::BodyExt as _;
    use tonic::codegen::{http, Service as _};

    let request = http::Request::post(format!("http://agentd/agentd.v1.AgentService/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(tonic::body::Body::new(http_body_util::Full::new(
            bytes::Bytes::from(body),
        )))
        .expect("a request");
    if let Err(error) = std::future::poll_fn(|cx| channel.poll_ready(cx)).await {
        return Status::unavailable(format!("not ready: {error}"));
    }
    let response = match channel.call(request).await {
        Ok(response) => response,
        Err(error) => return Status::unavailable(format!("no response: {error}")),
    };
    if let Some(status) = Status::from_header_map(response.headers()) {
        return status;
    }
    match response.into_body().collect().await {
        Ok(collected) => collected
            .trailers()
            .and_then(Status::from_header_map)
            .unwrap_or_else(|| Status::unknown("the response has no grpc-status")),
        Err(status) => status,
    }
}
