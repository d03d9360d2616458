//! Compiles `proto/` with protox (a pure-Rust protobuf compiler, so no
//! system `protoc` is needed) and writes the encoded descriptor set that
//! server reflection serves.

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

    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
