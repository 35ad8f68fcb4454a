//! Sets the shared library's versioned soname and generates the C header with cbindgen.
//! The header in `include/` is checked in: with `FMQ_WRITE_HEADER=1` this script rewrites it; a
//! test compares it with the generated one, so a stale header fails the tests.

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libfairmq_rs.so.{major}");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    // The plugin ABI is declared in the fairmq crate.
    println!("cargo:rerun-if-changed=../device/src/plugin/c_abi.rs");
    println!("cargo:rerun-if-env-changed=FMQ_WRITE_HEADER");
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(format!("{crate_dir}/cbindgen.toml")).expect("ffi/cbindgen.toml");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("fairmq_rs.h");
    match cbindgen::Builder::new().with_crate(&crate_dir).with_config(config).generate() {
        Ok(bindings) => {
            bindings.write_to_file(&out);
            if std::env::var("FMQ_WRITE_HEADER").is_ok_and(|v| v == "1") {
                bindings.write_to_file(format!("{crate_dir}/../include/fairmq_rs.h"));
            }
        }
        Err(e) => panic!("cbindgen failed: {e}"),
    }
}
