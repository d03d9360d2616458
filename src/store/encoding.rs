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

/// `value` as JSON, compressed if that is smaller.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    let json = serde_json::to_vec(value).map_err(corrupt)?;
    Ok(compress(json))
}

/// `value` as plain JSON: for what is overwritten soon anyway (the record
/// of a run while it runs), where compressing would cost more than it
/// saves.
pub(crate) fn encode_plain<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(corrupt)
}

/// `json` compressed, if that makes it smaller.
fn compress(json: Vec<u8>) -> Vec<u8> {
    if json.len() < MIN_COMPRESSED {
        return json;
    }
    // One buffer: the marker, the size `decompress_size_prepended` reads
    // (little-endian u32), then the block compressed in place.
    let Ok(size) = u32::try_from(json.len()) else {
        return json;
    };
    let mut compressed = vec![0; HEADER + lz4_flex::block::get_maximum_output_size(json.len())];
    compressed[0] = LZ4_JSON;
    compressed[1..HEADER].copy_from_slice(&size.to_le_bytes());
    match lz4_flex::block::compress_into(&json, &mut compressed[HEADER..]) {
        Ok(written) if HEADER + written < json.len() => {
            compressed.truncate(HEADER + written);
            compressed
        }
        _ => json,
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
    fn plain_json_stored_earlier_reads_back() {
        let json = br#"{"type":"text_delta","text":"hi"}"#;
        assert_eq!(
            decode::<Chunk>(json).unwrap(),
            Chunk::TextDelta { text: "hi".into() }
        );
        assert!(decode::<Chunk>(&[LZ4_JSON, 9, 9]).is_err());
    }
}
