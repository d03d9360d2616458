//! LZ4 block compression against one fixed dictionary, with the hash table
//! of the dictionary built once. A general compressor hashes the whole
//! dictionary into a fresh table on every call: for the one or two
//! kilobytes of a record or a step's chunks, that setup was a large share
//! of each call. Here each call starts from a copy of the prepared table.
//!
//! The output is a plain LZ4 block (see the format's specification,
//! `lz4_Block_format.md`), so any decoder given the same dictionary reads
//! it; the store reads it with `lz4_flex`. Positions are counted in one
//! space, the dictionary first and the input right after it, as the
//! decoder sees them: an offset reaches back from the input into the
//! dictionary's end.

use std::ops::Range;
use std::sync::LazyLock;

/// Bits of a hash: the table has 2^12 entries.
const HASH_LOG: u32 = 12;
const TABLE_SIZE: usize = 1 << HASH_LOG;
/// The shortest match the format encodes.
const MIN_MATCH: usize = 4;
/// The format's end rules: the last match starts at least 12 bytes before
/// the end of the block, and the last 5 bytes are literals.
const MF_LIMIT: usize = 12;
const LAST_LITERALS: usize = 5;
/// After 2^6 = 64 misses in a row the search steps 2 bytes at a time,
/// after 64 more 3, and so on (LZ4's own acceleration): text with nothing
/// to refer back to is passed over quickly.
const SKIP_TRIGGER: u32 = 6;

/// Where the last 4-byte sequence of each hash was seen, as a position in
/// the dictionary-then-input space. Positions fit in 16 bits because the
/// whole space does (see [`DictCompressor::fits`]).
type Table = [u16; TABLE_SIZE];

/// A compressor for one dictionary, holding that dictionary's table.
pub(super) struct DictCompressor {
    dict: &'static [u8],
    table: Box<Table>,
}

impl DictCompressor {
    /// Hashes every position of `dict`: later ones win, so each hash
    /// refers to the sequence nearest the input.
    pub(super) fn new(dict: &'static [u8]) -> Self {
        assert!(
            dict.len() < usize::from(u16::MAX),
            "a dictionary fits in a 64 KiB window"
        );
        let mut table = Box::new([0; TABLE_SIZE]);
        for position in 0..dict.len().saturating_sub(MIN_MATCH - 1) {
            table[hash(read_u32(dict, position))] = position as u16;
        }
        Self { dict, table }
    }

    /// Whether `input_len` bytes after the dictionary stay within 16-bit
    /// positions (and within LZ4's 64 KiB window).
    pub(super) fn fits(&self, input_len: usize) -> bool {
        self.dict.len() + input_len <= usize::from(u16::MAX)
    }

    /// Appends `input` to `out` as one LZ4 block that refers back into the
    /// dictionary. `input` must [`fit`](Self::fits).
    pub(super) fn compress(&self, input: &[u8], out: &mut Vec<u8>) {
        debug_assert!(self.fits(input.len()));
        let base = self.dict.len();
        let mut table: Table = *self.table;
        let block_start = out.len();
        out.resize(
            block_start + lz4_flex::block::get_maximum_output_size(input.len()),
            0,
        );
        let mut block = Block {
            buf: &mut out[block_start..],
            len: 0,
        };
        // Matches end before the last literals, and start early enough.
        let match_end_limit = input.len().saturating_sub(LAST_LITERALS);
        let last_start = input.len().saturating_sub(MF_LIMIT);
        let mut anchor = 0;
        let mut at = 0;
        let mut attempts = 1 << SKIP_TRIGGER;
        while input.len() > MF_LIMIT && at <= last_start {
            let sequence = read_u32(input, at);
            let slot = hash(sequence);
            let candidate = usize::from(table[slot]);
            table[slot] = (base + at) as u16;
            if !self.holds(input, candidate, sequence) {
                at += (attempts >> SKIP_TRIGGER) as usize;
                attempts += 1;
                continue;
            }
            let (mut start, mut from) = (at, candidate);
            let mut len = MIN_MATCH;
            len += if from < base {
                common_prefix(&self.dict[from + len..base], &input[start + len..match_end_limit])
            } else {
                common_prefix(&input[from - base + len..], &input[start + len..match_end_limit])
            };
            // Catch up backwards over literals that match too, without
            // leaving the buffer the match is in.
            let floor = if from < base { 0 } else { base };
            while start > anchor && from > floor && self.byte(input, from - 1) == input[start - 1] {
                start -= 1;
                from -= 1;
                len += 1;
            }
            let offset = (base + start - from) as u16;
            block.sequence(input, anchor..start, Some((offset, len)));
            at = start + len;
            anchor = at;
            attempts = 1 << SKIP_TRIGGER;
            // A position just before the match's end is a likely start of
            // the next one (a match ends 5 bytes before the input's end).
            table[hash(read_u32(input, at - 2))] = (base + at - 2) as u16;
        }
        block.sequence(input, anchor..input.len(), None);
        let written = block.len;
        out.truncate(block_start + written);
    }

    /// Whether position `candidate` holds the 4 bytes `sequence`, all of
    /// them in one buffer: a match in the dictionary also ends there.
    fn holds(&self, input: &[u8], candidate: usize, sequence: u32) -> bool {
        match candidate.checked_sub(self.dict.len()) {
            Some(index) => read_u32(input, index) == sequence,
            None => candidate + MIN_MATCH <= self.dict.len() && read_u32(self.dict, candidate) == sequence,
        }
    }

    /// The byte at `position` in the dictionary-then-input space.
    fn byte(&self, input: &[u8], position: usize) -> u8 {
        match position.checked_sub(self.dict.len()) {
            Some(index) => input[index],
            None => self.dict[position],
        }
    }
}

/// The compressor of the store's dictionary (see `encoding.rs`).
pub(super) static STORE: LazyLock<DictCompressor> = LazyLock::new(|| DictCompressor::new(super::DICTIONARY));

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// LZ4's multiplicative hash of a 4-byte sequence.
fn hash(sequence: u32) -> usize {
    (sequence.wrapping_mul(2_654_435_761) >> (32 - HASH_LOG)) as usize
}

/// How many leading bytes `a` and `b` share (at most the shorter's length).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let limit = a.len().min(b.len());
    let mut len = 0;
    while len + 8 <= limit {
        let x = u64::from_le_bytes(a[len..len + 8].try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(b[len..len + 8].try_into().expect("8 bytes"));
        let differ = x ^ y;
        if differ != 0 {
            return len + (differ.trailing_zeros() / 8) as usize;
        }
        len += 8;
    }
    while len < limit && a[len] == b[len] {
        len += 1;
    }
    len
}

/// Where a block is written: a buffer sized for the worst case (LZ4's
/// bound, as `lz4_flex` computes it), so that writing never grows it.
struct Block<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Block<'_> {
    /// One sequence: a token, the literals' length beyond 15, the
    /// literals (`input[literals]`), then, but for the last sequence, the
    /// match's offset and its length beyond 4 + 15.
    fn sequence(&mut self, input: &[u8], literals: Range<usize>, matched: Option<(u16, usize)>) {
        let literal_len = literals.len();
        let match_code = matched.map_or(0, |(_, len)| len - MIN_MATCH);
        self.byte(((literal_len.min(15) as u8) << 4) | match_code.min(15) as u8);
        if literal_len >= 15 {
            self.length(literal_len - 15);
        }
        // Most literal runs are short: copy a fixed 16 bytes (one move)
        // when both sides have them, and count only the run's own.
        let fixed = literals.start + 16;
        if literal_len <= 16 && fixed <= input.len() && self.len + 16 <= self.buf.len() {
            self.buf[self.len..self.len + 16].copy_from_slice(&input[literals.start..fixed]);
            self.len += literal_len;
        } else {
            self.bytes(&input[literals]);
        }
        if let Some((offset, _)) = matched {
            let [low, high] = offset.to_le_bytes();
            self.byte(low);
            self.byte(high);
            if match_code >= 15 {
                self.length(match_code - 15);
            }
        }
    }

    fn length(&mut self, mut rest: usize) {
        while rest >= 255 {
            self.byte(255);
            rest -= 255;
        }
        self.byte(rest as u8);
    }

    fn byte(&mut self, byte: u8) {
        self.buf[self.len] = byte;
        self.len += 1;
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(compressor: &DictCompressor, input: &[u8]) -> usize {
        let mut block = Vec::new();
        compressor.compress(input, &mut block);
        let back = lz4_flex::block::decompress_with_dict(&block, input.len(), compressor.dict)
            .unwrap_or_else(|error| panic!("{error} for {input:?}"));
        assert_eq!(back, input);
        block.len()
    }

    /// A small deterministic generator (xorshift), so that failures repeat.
    fn bytes(seed: &mut u64, len: usize, alphabet: &[u8]) -> Vec<u8> {
        (0..len)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                alphabet[(*seed % alphabet.len() as u64) as usize]
            })
            .collect()
    }

    #[test]
    fn every_block_decodes_to_its_input() {
        let compressor = &STORE;
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        let every_byte: Vec<u8> = (0..=255).collect();
        // Short inputs, the end rules' edge cases, runs of one byte, text
        // from a small alphabet (many matches) and from all bytes (few),
        // and slices of the dictionary itself (matches that reach its end).
        for len in (0..40).chain([63, 64, 65, 255, 256, 270, 1000, 4096, 20_000]) {
            round_trip(compressor, &vec![b'a'; len]);
            round_trip(compressor, &bytes(&mut seed, len, b"ab"));
            round_trip(compressor, &bytes(&mut seed, len, b"{\"type\":tool_call, "));
            round_trip(compressor, &bytes(&mut seed, len, &every_byte));
            let from = (seed % 2000) as usize;
            let slice = &compressor.dict[from..(from + len).min(compressor.dict.len())];
            round_trip(compressor, &[slice, slice].concat());
        }
        // The largest input that fits.
        let largest = bytes(
            &mut seed,
            usize::from(u16::MAX) - compressor.dict.len(),
            b"xyz \"",
        );
        assert!(compressor.fits(largest.len()) && !compressor.fits(largest.len() + 1));
        round_trip(compressor, &largest);
    }

    #[test]
    fn blocks_are_as_small_as_a_general_compressor_makes_them() {
        let record = serde_json::json!({
            "id": "019ad6c1-6f6e-7a52-9f0e-5b1f8f9f3c11", "agent_id": "assistant", "status": "suspended",
            "state": {"messages": [{"role": "user", "content": "Set up my workspace"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "name": "ask_user",
                 "args": {"question": "Which plan?", "options": [{"label": "Pro"}, {"label": "Team"}]}}]}],
              "pending": [{"call": {"id": "call_1", "name": "ask_user"}, "waiting": {"kind": "suspended"}}]}
        });
        let json = serde_json::to_vec(&record).unwrap();
        let ours = round_trip(&STORE, &json);
        let general = lz4_flex::block::compress_with_dict(&json, STORE.dict).len();
        assert!(ours <= general + general / 20, "{ours} bytes, against {general}");
        assert!(ours * 2 < json.len(), "{ours} bytes for {} of JSON", json.len());
    }
}
