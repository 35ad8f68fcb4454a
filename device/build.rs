//! With the `pmix` feature: builds the plugin's small C shim over the system's libpmix (Debian:
//! libpmix-dev), found through pkg-config.

fn main() {
    println!("cargo:rerun-if-changed=src/plugin/pmix/shim.c");
    #[cfg(feature = "pmix")]
    build_pmix_shim();
}

#[cfg(feature = "pmix")]
fn build_pmix_shim() {
    let flags = |what: &str| -> Vec<String> {
        let out = std::process::Command::new("pkg-config")
            .args([what, "pmix"])
            .output()
            .expect("pkg-config runs (the pmix feature needs it and libpmix-dev)");
        assert!(out.status.success(), "pkg-config finds pmix (install libpmix-dev)");
        String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_owned).collect()
    };
    let mut build = cc::Build::new();
    build.file("src/plugin/pmix/shim.c").warnings(true);
    for f in flags("--cflags") {
        if let Some(dir) = f.strip_prefix("-I") {
            build.include(dir);
        }
    }
    build.compile("fmq_pmix_shim");
    for f in flags("--libs") {
        if let Some(dir) = f.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(lib) = f.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={lib}");
        }
    }
}
