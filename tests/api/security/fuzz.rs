//! The fuzz targets' properties (`fuzz/src/lib.rs`) in `cargo test`: the
//! kept corpus (`tests/fuzz_corpus/<target>/`, inputs the fuzzer found
//! interesting, and every input that once broke a property) is replayed,
//! then a short seeded random search runs on stable Rust: random bytes,
//! and corpus inputs with random mutations. `AGENTD_FUZZ_ITERATIONS`
//! lengthens the search (per target), `AGENTD_FUZZ_SEED` changes it.

#[path = "../../../fuzz/src/lib.rs"]
mod checks;

use std::path::{Path, PathBuf};

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_corpus")
        .join(target)
}

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut inputs: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a corpus entry").path();
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            (path, bytes)
        })
        .collect();
    inputs.sort();
    inputs
}

/// Runs `check` on `input`; if it panics, keeps the input in a file (to
/// add to the corpus once fixed) and names it.
fn run(target: &str, check: fn(&[u8]), input: &[u8], origin: &dyn std::fmt::Display) {
    if std::panic::catch_unwind(|| check(input)).is_err() {
        let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-failure-{target}"));
        let _ = std::fs::write(&kept, input);
        let head = &input[..input.len().min(200)];
        panic!(
            "fuzz target {target} fails on {origin}; input kept in {} (first bytes {head:?})",
            kept.display()
        );
    }
}

#[test]
fn the_kept_corpus_still_passes_every_property() {
    for (target, check) in checks::TARGETS {
        let inputs = corpus(target);
        assert!(
            inputs.len() >= 10,
            "{target}: only {} corpus inputs",
            inputs.len()
        );
        for (path, bytes) in inputs {
            run(target, check, &bytes, &path.display());
        }
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn a_seeded_random_search_finds_nothing() {
    let iterations = env_number("AGENTD_FUZZ_ITERATIONS", 3000);
    let seed = env_number("AGENTD_FUZZ_SEED", 0xF022);
    for (target, check) in checks::TARGETS {
        let mut rng = fastrand::Rng::with_seed(seed);
        let seeds: Vec<Vec<u8>> = corpus(target).into_iter().map(|(_, bytes)| bytes).collect();
        for iteration in 0..iterations {
            let input = if seeds.is_empty() || rng.bool() {
                let len = rng.usize(..512);
                (0..len).map(|_| rng.u8(..)).collect()
            } else {
                let seed = seeds[rng.usize(..seeds.len())].clone();
                mutate(&mut rng, seed)
            };
            run(
                target,
                check,
                &input,
                &format!("iteration {iteration} (seed {seed})"),
            );
        }
    }
}

/// Flips, replaces, inserts, deletes or duplicates a few bytes.
fn mutate(rng: &mut fastrand::Rng, mut bytes: Vec<u8>) -> Vec<u8> {
    for _ in 0..rng.usize(1..8) {
        let at = if bytes.is_empty() {
            0
        } else {
            rng.usize(..bytes.len())
        };
        match rng.u8(..5) {
            0 if !bytes.is_empty() => bytes[at] ^= 1 << rng.u8(..8),
            1 if !bytes.is_empty() => bytes[at] = rng.u8(..),
            2 if !bytes.is_empty() => {
                bytes.remove(at);
            }
            3 if !bytes.is_empty() => {
                let end = (at + rng.usize(1..16)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                let to = rng.usize(..=bytes.len());
                bytes.splice(to..to, copy);
            }
            _ => bytes.insert(at.min(bytes.len()), rng.u8(..)),
        }
    }
    bytes
}
