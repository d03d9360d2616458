//! How the SQL backends encode a run record and a chunk as bytes: JSON,
//! compressed with LZ4 when that makes it smaller. A suspended run's record
//! and its `tool_call_suspended` chunk repeat the question and its options
//! several times (the call's arguments, the payload, the conversation), so
//! compression about halves them, for a few microseconds. Plain JSON, as
//! stored before compression existed, reads back unchanged: the two are
//! told apart by the first byte.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{corrupt, StoreError};

/// The first byte of compressed JSON. JSON itself starts with `{` or `[`
/// here (records and chunks are objects, batches of events arrays), never
/// with a control byte.
const LZ4_JSON: u8 = 0x01;

/// The marker byte and the uncompressed size before a compressed block.
const HEADER: usize = 1 + 4;

/// Below this size compression rarely pays for its header.
const MIN_COMPRESSED: usize = 192;

/// Scratch buffers reused by every encoding on a thread: the JSON grows in
/// place instead of through a chain of reallocations, and LZ4 writes into a
/// buffer that is already there (and already zeroed); what is returned is
/// one allocation of the final size.
struct Scratch {
    json: Vec<u8>,
    compressed: Vec<u8>,
}

/// A scratch buffer that grew past this (a very long conversation) is let
/// go after use rather than kept for the thread's lifetime.
const MAX_KEPT: usize = 1 << 20;

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = const {
        std::cell::RefCell::new(Scratch { json: Vec::new(), compressed: Vec::new() })
    };
}

/// `value` as JSON, compressed if that is smaller.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    with_json(value, compress)
}

/// `value` as plain JSON: for what is overwritten soon anyway (the record
/// of a run while it runs), where compressing would cost more than it
/// saves.
pub(crate) fn encode_plain<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    with_json(value, |json, _| json.to_vec())
}

/// `value` written as JSON into this thread's scratch buffer, then made
/// into the bytes to store by `finish` (given the LZ4 scratch buffer too).
/// Never called again from inside `value`'s serialisation.
fn with_json<T: Serialize>(
    value: &T,
    finish: impl FnOnce(&[u8], &mut Vec<u8>) -> Vec<u8>,
) -> Result<Vec<u8>, StoreError> {
    SCRATCH.with_borrow_mut(|Scratch { json, compressed }| {
        json.clear();
        let encoded = serde_json::to_writer(&mut *json, value)
            .map_err(corrupt)
            .map(|()| finish(json, compressed));
        for buffer in [json, compressed] {
            if buffer.capacity() > MAX_KEPT {
                *buffer = Vec::new();
            }
        }
        encoded
    })
}

/// `json` compressed if that makes it smaller, else as it is; `scratch`
/// is where LZ4 writes.
fn compress(json: &[u8], scratch: &mut Vec<u8>) -> Vec<u8> {
    if json.len() < MIN_COMPRESSED {
        return json.to_vec();
    }
    // The marker, the size `decompress_size_prepended` reads (little-endian
    // u32), then the block.
    let Ok(size) = u32::try_from(json.len()) else {
        return json.to_vec();
    };
    let room = HEADER + lz4_flex::block::get_maximum_output_size(json.len());
    if scratch.len() < room {
        scratch.resize(room, 0);
    }
    let block = &mut scratch[..room];
    block[0] = LZ4_JSON;
    block[1..HEADER].copy_from_slice(&size.to_le_bytes());
    match lz4_flex::block::compress_into(json, &mut block[HEADER..]) {
        Ok(written) if HEADER + written < json.len() => block[..HEADER + written].to_vec(),
        _ => json.to_vec(),
    }
}

/// Reads back what [`encode`] wrote, or plain JSON.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    match bytes.split_first() {
        Some((&LZ4_JSON, compressed)) => {
            let json = lz4_flex::block::decompress_size_prepended(compressed).map_err(corrupt)?;
            serde_json::from_slice(&json).map_err(corrupt)
        }
        _ => serde_json::from_slice(bytes).map_err(corrupt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::Chunk;

    #[test]
    fn small_values_stay_plain_json_and_large_ones_shrink() {
        let small = Chunk::StepStart { step: 1 };
        let bytes = encode(&small).unwrap();
        assert_eq!(bytes.first(), Some(&b'{'));
        assert_eq!(decode::<Chunk>(&bytes).unwrap(), small);

        let large = Chunk::TextDelta {
            text: "Which plan should I set up for you? ".repeat(20),
        };
        let bytes = encode(&large).unwrap();
        assert_eq!(bytes.first(), Some(&LZ4_JSON));
        assert!(bytes.len() < serde_json::to_vec(&large).unwrap().len() / 2);
        assert_eq!(decode::<Chunk>(&bytes).unwrap(), large);
        // The layout stored so far: the marker, then lz4_flex's block
        // with its size prepended.
        let json = serde_json::to_vec(&large).unwrap();
        let mut stored = vec![LZ4_JSON];
        stored.extend(lz4_flex::block::compress_prepend_size(&json));
        assert_eq!(bytes, stored);
    }

    #[test]
    fn each_encoding_stands_alone_though_buffers_are_reused() {
        // Longest first: what follows must not carry its bytes.
        let values: Vec<Chunk> = [400, 12, 60, 2, 200]
            .into_iter()
            .map(|words| Chunk::TextDelta {
                text: (0..words).map(|i| format!("w{} ", i % 7)).collect(),
            })
            .collect();
        for value in &values {
            let bytes = encode(value).unwrap();
            assert_eq!(&decode::<Chunk>(&bytes).unwrap(), value);
            let plain = serde_json::to_vec(value).unwrap();
            assert!(bytes.len() <= plain.len(), "never larger than the JSON");
            assert_eq!(encode_plain(value).unwrap(), plain);
        }
    }

    #[test]
    fn plain_json_stored_earlier_reads_back() {
        let json = br#"{"type":"text_delta","text":"hi"}"#;
        assert_eq!(
            decode::<Chunk>(json).unwrap(),
            Chunk::TextDelta { text: "hi".into() }
        );
        assert!(decode::<Chunk>(&[LZ4_JSON, 9, 9]).is_err());
    }
}
