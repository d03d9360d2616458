//! How the SQL backends encode a run record and a chunk as bytes: JSON,
//! compressed with LZ4 when that makes it smaller. A suspended run's record
//! and its `tool_call_suspended` chunk repeat the question and its options
//! several times (the call's arguments, the payload, the conversation), and
//! every record and chunk spells out the same field names, so compression
//! against a dictionary of those names (`lz4_dictionary.txt`) brings them
//! down to about a third of their JSON, where LZ4 without it leaves more
//! than half; `lz4_flex` hashes the dictionary afresh on each call, which
//! costs a few tenths of a microsecond of the one or two a value takes.
//! Fewer bytes per write is what makes a commit cheap: the store writes,
//! checksums and syncs whole pages. Plain JSON, as stored before
//! compression existed, and LZ4 without the dictionary, as stored before
//! it did, read back unchanged: the three are told apart by the first
//! byte.

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

/// `value` as JSON, compressed if that is smaller.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    encode_plain(value).map(compress)
}

/// `value` as plain JSON: for what is overwritten soon anyway (the record
/// of a run while it runs), where compressing would cost more than it
/// saves.
pub(crate) fn encode_plain<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(corrupt)
}

/// `json` compressed against [`DICTIONARY`] if that makes it smaller, else
/// as it is.
fn compress(json: Vec<u8>) -> Vec<u8> {
    if json.len() < MIN_COMPRESSED {
        return json;
    }
    // The marker, the size `decompress_size_prepended_with_dict` reads
    // (little-endian u32), then the block.
    let Ok(size) = u32::try_from(json.len()) else {
        return json;
    };
    let mut stored = vec![0; HEADER + lz4_flex::block::get_maximum_output_size(json.len())];
    stored[0] = LZ4_DICT_JSON;
    stored[1..HEADER].copy_from_slice(&size.to_le_bytes());
    match lz4_flex::block::compress_into_with_dict(&json, &mut stored[HEADER..], DICTIONARY) {
        Ok(written) if HEADER + written < json.len() => {
            stored.truncate(HEADER + written);
            stored
        }
        _ => json,
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
    use agentd_domain::Chunk;

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
        let events = [agentd_domain::Event {
            seq: 12,
            time: agentd_domain::Timestamp(1_796_066_454_877_332),
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
        assert_eq!(decode::<Vec<agentd_domain::Event>>(&bytes).unwrap(), events);
    }

    #[test]
    fn values_longer_than_lz4s_window_shrink_too() {
        // Longer than LZ4's 64 KiB window, which the dictionary is in.
        let long = Chunk::TextDelta {
            text: "Which plan should I set up for you? ".repeat(3000),
        };
        let json = serde_json::to_vec(&long).unwrap();
        assert!(json.len() > 1 << 16);
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
    fn every_encoding_reads_back_and_is_never_larger_than_its_json() {
        // Sizes on both sides of the compression threshold, longest first.
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
