//! `agentd chat --json`: each chunk as one line of JSON, in the proto3 JSON
//! mapping (camelCase names, enums by name, 64-bit integers as strings,
//! default values left out), the same shape grpcurl prints, so scripts can
//! read either. Built from the descriptors compiled into the binary.

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, SerializeOptions};

use crate::pb;

/// Why a chunk could not be written as JSON.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("reading the compiled descriptors: {0}")]
    Descriptors(#[from] prost_reflect::DescriptorError),
    #[error("the compiled descriptors lack agentd.v1.AgentChunk")]
    NoChunkMessage,
    #[error("re-reading a chunk: {0}")]
    Decode(#[from] prost::DecodeError),
    #[error("writing JSON: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// Writes chunks as JSON lines.
pub(super) struct JsonChunks {
    chunk: MessageDescriptor,
}

impl JsonChunks {
    pub(super) fn new() -> Result<Self, JsonError> {
        let pool = DescriptorPool::decode(pb::FILE_DESCRIPTOR_SET)?;
        let chunk = pool
            .get_message_by_name("agentd.v1.AgentChunk")
            .ok_or(JsonError::NoChunkMessage)?;
        Ok(Self { chunk })
    }

    /// One chunk as one line of JSON (no newline).
    pub(super) fn line(&self, chunk: &pb::AgentChunk) -> Result<String, JsonError> {
        let message = DynamicMessage::decode(self.chunk.clone(), chunk.encode_to_vec().as_slice())?;
        let mut out = serde_json::Serializer::new(Vec::new());
        message.serialize_with_options(&mut out, &SerializeOptions::new())?;
        // serde_json writes UTF-8 only.
        Ok(String::from_utf8_lossy(&out.into_inner()).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_print_in_the_proto_json_mapping() {
        let json = JsonChunks::new().expect("descriptors");
        let chunk = pb::AgentChunk {
            run_id: "r1".into(),
            seq: 7,
            chunk: Some(pb::agent_chunk::Chunk::Finish(pb::RunFinished {
                reason: pb::FinishReason::Suspended.into(),
                ..Default::default()
            })),
            ..Default::default()
        };
        let line: serde_json::Value = serde_json::from_str(&json.line(&chunk).expect("line")).expect("JSON");
        assert_eq!(line["runId"], "r1");
        assert_eq!(line["seq"], "7");
        assert_eq!(line["finish"]["reason"], "FINISH_REASON_SUSPENDED");
    }
}
