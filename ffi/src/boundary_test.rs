//! A test that every export enters the panic boundary before it does anything.
//!
//! The body of every export must start with a guard call (`guard`, `guard_value`,
//! `guard_transfer`), or with a helper whose own body starts with one. The test checks this on the
//! sources. So a new export written without a guard fails the tests, instead of waiting for a
//! panic to find it.

use std::path::Path;

/// Calls that open the boundary themselves.
const GUARDS: [&str; 3] = ["guard(", "guard_value(", "guard_transfer("];
/// Helpers whose bodies must start with one of `GUARDS` (checked below too).
const HELPERS: [&str; 4] = ["with_ctx(", "with_ctx_code(", "new_with(", "with_config("];

/// The body of the function whose signature starts at `at`, without leading blank and comment lines.
fn body_start(src: &str, at: usize) -> &str {
    let open = src[at..].find('{').expect("a function body") + at + 1;
    let mut rest = &src[open..];
    loop {
        let trimmed = rest.trim_start();
        if trimmed.starts_with("//") {
            rest = trimmed.split_once('\n').map_or("", |(_, after)| after);
        } else {
            return trimmed;
        }
    }
}

fn sources() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("ffi/src")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).expect("readable source")))
        .collect();
    out.sort();
    out
}

#[test]
fn every_export_starts_inside_the_panic_boundary() {
    let mut exports = 0;
    let mut unguarded = Vec::new();
    let mut helpers_found = 0;
    for (file, src) in sources() {
        for marker in ["pub extern \"C\" fn ", "pub unsafe extern \"C\" fn "] {
            for (at, _) in src.match_indices(marker) {
                let name: String = src[at + marker.len()..].chars().take_while(|c| *c != '(').collect();
                exports += 1;
                let body = body_start(&src, at);
                if !GUARDS.iter().chain(HELPERS.iter()).any(|g| body.starts_with(g)) {
                    unguarded.push(format!("{file}: {name}"));
                }
            }
        }
        for helper in HELPERS {
            let def = format!("fn {helper}").replace('(', "");
            if let Some(at) = src.find(&format!("{def}<")).or_else(|| src.find(&format!("{def}("))) {
                helpers_found += 1;
                let body = body_start(&src, at);
                if !GUARDS.iter().any(|g| body.starts_with(g)) {
                    unguarded.push(format!("{file}: helper {helper}"));
                }
            }
        }
    }
    assert_eq!(helpers_found, HELPERS.len(), "a guarding helper was renamed: update HELPERS");
    assert!(exports > 60, "only {exports} exports found: is the source scan still right?");
    assert!(unguarded.is_empty(), "exports (or helpers) doing work outside the panic boundary: {unguarded:#?}");
}
