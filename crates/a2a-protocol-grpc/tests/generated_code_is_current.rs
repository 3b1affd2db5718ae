//! The code in `src/generated/` is what `proto/a2a.proto` generates: this test generates it
//! again (with protox, a protobuf compiler in Rust, so no `protoc` is needed) and compares.
//! After changing the proto, run it with `A2A_REGENERATE=1` to rewrite the checked-in code.

use std::path::Path;

#[test]
fn the_checked_in_code_is_what_the_proto_generates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let descriptors = protox::compile([root.join("proto/a2a.proto")], [root.join("proto")])
        .expect("a2a.proto compiles");
    let out = tempfile::tempdir().expect("temp dir");
    tonic_prost_build::configure()
        .build_transport(false)
        .out_dir(out.path())
        .compile_fds(descriptors)
        .expect("code generation");
    let generated = std::fs::read_to_string(out.path().join("lf.a2a.v1.rs")).expect("generated");
    let checked_in_path = root.join("src/generated/lf.a2a.v1.rs");
    if std::env::var_os("A2A_REGENERATE").is_some() {
        std::fs::write(&checked_in_path, &generated).expect("rewrite the checked-in code");
        return;
    }
    let checked_in = std::fs::read_to_string(&checked_in_path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "src/generated/lf.a2a.v1.rs is stale: run \
         `A2A_REGENERATE=1 cargo test -p a2a-protocol-grpc --test generated_code_is_current`"
    );
}
