//! Compiles `proto/` with protox (a pure-Rust protobuf compiler, so no
//! system `protoc` is needed) and writes the encoded descriptor sets that
//! server reflection serves: agentd's own, and A2A's, compiled from the
//! proto that the `a2a-pb` crate ships (never copied here).

use std::{env, fs, path::PathBuf};

const PROTO: &str = "proto/agentd/v1/agentd.proto";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");

    let descriptors = protox::compile([PROTO], ["proto"])?;
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(
        out_dir.join("agentd_descriptor.bin"),
        prost::Message::encode_to_vec(&descriptors),
    )?;

    let a2a = match a2a_proto_dir() {
        Some(dir) => {
            println!("cargo:rerun-if-changed={}", dir.display());
            prost::Message::encode_to_vec(&protox::compile(["a2a.proto"], [dir])?)
        }
        None => {
            println!(
                "cargo:warning=the a2a-pb crate's proto was not found in the cargo registry: \
                 server reflection will not list lf.a2a.v1.A2AService"
            );
            Vec::new()
        }
    };
    fs::write(out_dir.join("a2a_descriptor.bin"), a2a)?;

    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}

/// The `proto` folder of the `a2a-pb` version Cargo.lock names, in the
/// cargo registry's sources (where cargo unpacked it for this build).
fn a2a_proto_dir() -> Option<PathBuf> {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").ok()?);
    let lock = fs::read_to_string(manifest.join("Cargo.lock")).ok()?;
    let version = lock
        .split("[[package]]")
        .find(|package| package.contains("name = \"a2a-pb\"\n"))?
        .lines()
        .find_map(|line| line.strip_prefix("version = \""))?
        .trim_end_matches('"')
        .to_owned();
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))?;
    let sources = fs::read_dir(cargo_home.join("registry/src")).ok()?;
    sources
        .filter_map(Result::ok)
        .map(|index| index.path().join(format!("a2a-pb-{version}/proto")))
        .find(|dir| dir.join("a2a.proto").is_file())
}
