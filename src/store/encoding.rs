//! How the SQL backends encode a run record and a chunk as bytes: JSON,
//! compressed with LZ4 when that makes it smaller. A suspended run's record
//! and its `tool_call_suspended` chunk repeat the question and its options
//! several times (the call's arguments, the payload, the conversation), and
//! every record and chunk spells out the same field names, so compression
//! against a dictionary of those names (`lz4_dictionary.txt`) brings them
//! down to about a third of their JSON, for a few microseconds. Fewer
//! bytes per write is what makes a commit cheap: the store writes,
//! checksums and syncs whole pages. Plain JSON, as stored before
//! compression existed, and LZ4 without the dictionary, as stored before
//! it did, read back unchanged: the three are told apart by the first
//! byte.

mod lz4;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{corrupt, StoreError};

/// The first byte of JSON compressed without a dictionary (no longer
/// written). JSON itself starts with `{` or `[` here (records and chunks
/// are objects, batches of events arrays), never with a control byte.
const LZ4_JSON: u8 = 0x01;

/// The first byte of JSON compressed against [`DICTIONARY`].
const LZ4_DICT_JSON: u8 = 0x02;

/// What compression of [`LZ4_DICT_JSON`] refers back to: the field names
/// and fixed values of records and chunks, so that even their first
/// occurrence in a value is a short match. Stored values depend on every
/// byte of it: it never changes (a different one would need a marker of
/// its own).
const DICTIONARY: &[u8] = include_bytes!("lz4_dictionary.txt");

/// The marker byte and the uncompressed size before a compressed block.
const HEADER: usize = 1 + 4;

/// Below this size compression rarely pays for its header.
const MIN_COMPRESSED: usize = 192;

/// Scratch buffers reused by every encoding on a thread: the JSON grows in
/// place instead of through a chain of reallocations, and LZ4 writes into a
/// buffer that is already there; what is returned is one allocation of the
/// final size.
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
    scratch.clear();
    scratch.push(LZ4_DICT_JSON);
    scratch.extend_from_slice(&size.to_le_bytes());
    if lz4::STORE.fits(json.len()) {
        lz4::STORE.compress(json, scratch);
    } else {
        // Too long for 16-bit positions: the general compressor.
        scratch.resize(HEADER + lz4_flex::block::get_maximum_output_size(json.len()), 0);
        match lz4_flex::block::compress_into_with_dict(json, &mut scratch[HEADER..], DICTIONARY) {
            Ok(written) => scratch.truncate(HEADER + written),
            Err(_) => return json.to_vec(),
        }
    }
    if scratch.len() < json.len() {
        scratch.to_vec()
    } else {
        json.to_vec()
    }
}

/// Reads back what [`encode`] wrote, or wrote before, or plain JSON.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(&json(bytes)?).map_err(corrupt)
}

/// The JSON that [`encode`] (or an earlier build) stored as `bytes`.
pub(crate) fn json(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, StoreError> {
    let json = match bytes.split_first() {
        Some((&LZ4_DICT_JSON, compressed)) => {
            lz4_flex::block::decompress_size_prepended_with_dict(compressed, DICTIONARY)
        }
        Some((&LZ4_JSON, compressed)) => lz4_flex::block::decompress_size_prepended(compressed),
        _ => return Ok(std::borrow::Cow::Borrowed(bytes)),
    };
    json.map(std::borrow::Cow::Owned).map_err(corrupt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Chunk;

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
        assert_eq!(bytes.first(), Some(&LZ4_DICT_JSON));
        assert!(bytes.len() < serde_json::to_vec(&large).unwrap().len() / 2);
        assert_eq!(decode::<Chunk>(&bytes).unwrap(), large);
        // The layout: the marker, the JSON's size, then an LZ4 block that
        // a general decoder reads with the dictionary.
        let json = serde_json::to_vec(&large).unwrap();
        assert_eq!(bytes[1..HEADER], (json.len() as u32).to_le_bytes());
        let block = lz4_flex::block::decompress_with_dict(&bytes[HEADER..], json.len(), DICTIONARY);
        assert_eq!(block.unwrap(), json);
    }

    #[test]
    fn the_dictionary_shrinks_what_has_no_repeats_of_its_own() {
        // Each field name occurs once: without the dictionary LZ4 finds
        // almost nothing to refer back to.
        let result = Chunk::ToolResult {
            tool_call_id: "call_4f1c".into(),
            tool_name: "ask_user".into(),
            content: "User answered: Deploy to the staging cluster tonight".into(),
            is_error: false,
        };
        let events = [crate::domain::Event {
            seq: 12,
            time: crate::domain::Timestamp(1_796_066_454_877_332),
            chunk: result,
        }];
        let json = serde_json::to_vec(&events).unwrap();
        let bytes = encode(&events).unwrap();
        let without = lz4_flex::block::compress(&json).len() + HEADER;
        assert!(
            bytes.len() * 3 < without * 2,
            "{} bytes with the dictionary, {without} without",
            bytes.len()
        );
        assert_eq!(decode::<Vec<crate::domain::Event>>(&bytes).unwrap(), events);
    }

    #[test]
    fn values_too_long_for_the_prepared_compressor_shrink_too() {
        let long = Chunk::TextDelta {
            text: "Which plan should I set up for you? ".repeat(3000),
        };
        let json = serde_json::to_vec(&long).unwrap();
        assert!(!lz4::STORE.fits(json.len()));
        let bytes = encode(&long).unwrap();
        assert_eq!(bytes.first(), Some(&LZ4_DICT_JSON));
        assert!(bytes.len() < json.len() / 10);
        assert_eq!(decode::<Chunk>(&bytes).unwrap(), long);
    }

    #[test]
    fn values_compressed_before_the_dictionary_read_back() {
        let large = Chunk::TextDelta {
            text: "Which plan should I set up for you? ".repeat(20),
        };
        let json = serde_json::to_vec(&large).unwrap();
        let mut stored = vec![LZ4_JSON];
        stored.extend(lz4_flex::block::compress_prepend_size(&json));
        assert_eq!(decode::<Chunk>(&stored).unwrap(), large);
    }

    #[test]
    fn the_dictionary_never_changes() {
        // Every byte of it, by length and FNV-1a hash: values stored with
        // it would read back wrong, or not at all, after any change.
        let fnv1a = DICTIONARY.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, &byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
        assert_eq!((DICTIONARY.len(), fnv1a), (2610, 0x4268_3e2f_a3da_e794));
        // And a value stored with it reads back.
        let stored = "02a3000000135b76001637f000ee393630363634353438373733333284000f8c010f\
                      34315f31ae070f8f01183c50726f92015073657d7d5d";
        let bytes: Vec<u8> = (0..stored.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&stored[i..i + 2], 16).unwrap())
            .collect();
        let events: serde_json::Value = decode(&bytes).unwrap();
        assert_eq!(
            events,
            serde_json::json!([{"seq": 7, "time": 1_796_066_454_877_332_u64, "chunk": {
                "type": "tool_result", "tool_call_id": "call_1_1", "tool_name": "ask_user",
                "content": "User answered: Pro", "is_error": false}}])
        );
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
        assert!(decode::<Chunk>(&[LZ4_DICT_JSON, 9, 9]).is_err());
    }
}
