//! Compiles the test server's `.proto` with protox (no protoc): a descriptor set for the
//! reflection service and tests, and, with the `test-server` feature, tonic's code.

use prost::Message;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=tests/proto/bench.proto");
    let files = protox::compile(["bench.proto"], ["tests/proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("bench_descriptor.bin"), files.encode_to_vec())?;
    #[cfg(feature = "test-server")]
    {
        tonic_prost_build::configure()
            .build_client(true)
            .build_server(true)
            .compile_fds(files)?;
    }
    Ok(())
}
