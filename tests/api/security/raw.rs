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
pub struct RawCodec;

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
pub async fn call(channel: Channel, method: &str, streaming: bool, body: Vec<u8>) -> Status {
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
