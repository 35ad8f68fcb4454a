//! Plugins from shared libraries (issue 19): `-P/--plugin`, `-S/--plugin-search-path`, the C
//! plugin ABI of `include/fairmq_rs.h`, with the C example plugin (`ffi/examples/plugin.c`)
//! built by the system's C compiler and loaded by a device process.

mod common;
use common::process::{run_to_end, start_as, wait_until, Proc};
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::process::Command;

const DEVICE: &str = env!("CARGO_BIN_EXE_fairmq-test-device");

/// A directory holding `libfairmq-plugin-example.so`, built from the example.
fn plugin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = dir.path().join("libfairmq-plugin-example.so");
    let status = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-fPIC", "-shared"])
        .arg(format!("-I{}", root.join("include").display()))
        .arg(root.join("ffi/examples/plugin.c"))
        .arg("-o")
        .arg(&out)
        .arg("-lpthread")
        .status()
        .expect("a C compiler (cc) builds the example plugin");
    assert!(status.success(), "the example plugin compiles");
    dir
}

fn device(dir: &Path, extra: &str) -> Proc {
    let search = dir.to_string_lossy().into_owned();
    let mut args = vec!["--id", "plugged", "--color", "false", "--severity", "debug", "-S", &search, "-P", "example"];
    args.extend(extra.split_whitespace());
    start_as(None, DEVICE, &args)
}

fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// The states a log's `state N` lines name, in order.
fn states(lines: &[String]) -> Vec<i32> {
    lines.iter().filter_map(|l| l.strip_prefix("state ")?.parse().ok()).collect()
}

#[test]
fn i19_a_c_plugin_takes_control_and_drives_the_device_while_the_builtin_controller_stands_back() {
    let dir = plugin_dir();
    let log: PathBuf = dir.path().join("log");
    let mut d = device(dir.path(), &format!("--control static --example-drive --example-log {}", log.display()));
    assert_eq!(d.wait().code(), Some(0), "{}", d.seen.join("\n"));
    let lines = log_lines(&log);
    assert_eq!(lines.first().map(String::as_str), Some("controller: example"), "{lines:?}");
    // IDLE, up to RUNNING once, down to EXITING: one controller drove it.
    assert_eq!(states(&lines), [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 11, 13, 9, 14, 3, 15], "{lines:?}");
    assert!(lines.contains(&"drove the device to EXITING".to_owned()), "{lines:?}");
    assert_eq!(lines.last().map(String::as_str), Some("stopped"), "the plugin stops after the device exits");
    assert!(
        d.saw("Plugin 'control' is not allowed to take over control. Currently, plugin 'example' has taken control.")
    );
    assert!(d.saw("Loaded plugin: 'example', version '1.2.3', maintainer 'Jane Doe <jane.doe@example.org>', homepage 'https://example.org/fairmq-plugin-example'"));
    assert!(d.saw("[example] example plugin started"), "the plugin logs through the device");
}

#[test]
fn i19_a_c_plugin_that_only_watches_sees_every_state_under_static_control() {
    let dir = plugin_dir();
    let log = dir.path().join("log");
    let mut d = device(dir.path(), &format!("--control static --runs 3 --example-log {}", log.display()));
    assert_eq!(d.wait().code(), Some(0), "{}", d.seen.join("\n"));
    let lines = log_lines(&log);
    assert!(!lines.iter().any(|l| l.starts_with("controller:")), "{lines:?}");
    assert_eq!(states(&lines), [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 11, 13, 9, 14, 3, 15], "{lines:?}");
    assert_eq!(lines.last().map(String::as_str), Some("stopped"));
}

#[test]
fn i19_a_signal_shuts_down_a_device_that_a_plugin_controls() {
    let dir = plugin_dir();
    let log = dir.path().join("log");
    let mut d = device(
        dir.path(),
        &format!("--control static --example-drive --example-run-ms 600000 --example-log {}", log.display()),
    );
    wait_until("the plugin drove the device to RUNNING", || states(&log_lines(&log)).contains(&12));
    d.signal(Signal::SIGINT as i32);
    assert_eq!(d.wait().code(), Some(0), "{}", d.seen.join("\n"));
    let lines = log_lines(&log);
    assert_eq!(states(&lines).last(), Some(&15), "{lines:?}");
    assert!(lines.contains(&"the device left RUNNING without the plugin".to_owned()), "{lines:?}");
    assert!(d.saw("Received device shutdown request (signal)."));
    assert_eq!(lines.last().map(String::as_str), Some("stopped"));
}

#[test]
fn i19_plugin_options_and_the_plugin_manager_show_in_help() {
    let dir = plugin_dir();
    let mut d = device(dir.path(), "--help");
    assert_eq!(d.wait().code(), Some(0));
    let out = d.seen.join("\n");
    for s in [
        "Example Plugin:",
        "--example-drive",
        "--example-run-ms arg (=200)",
        "Plugin Manager:",
        "-P [ --plugin ] arg",
        "-S [ --plugin-search-path ] arg",
    ] {
        assert!(out.contains(s), "--help lacks '{s}':\n{out}");
    }
    // FairMQ's order: general, the program's own, the plugins' groups by plugin name (config,
    // control, example), the plugin manager.
    let at = |t: &str| out.find(&format!("\n{t}:")).unwrap_or_else(|| panic!("no group '{t}':\n{out}"));
    let order =
        ["Custom options", "FairMQ device options", "Control (builtin) Plugin", "Example Plugin", "Plugin Manager"];
    let places: Vec<usize> = order.iter().map(|t| at(t)).collect();
    assert!(places.windows(2).all(|w| w[0] < w[1]), "groups out of FairMQ's order {order:?}: {places:?}\n{out}");
}

#[test]
fn i19_plugins_that_cannot_be_loaded_end_the_program_with_1_and_say_why() {
    let dir = plugin_dir();
    let search = dir.path().to_string_lossy().into_owned();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["-P", "nope"], "Could not load dynamic plugin nope from configured search paths (-S) nor with system lookup (system libdirs, RUNPATH, $LD_LIBRARY_PATH)."),
        (vec!["-S", "<"], "Specified path is empty."),
        (vec!["-S", DEVICE], "is not a directory."),
        (vec!["-P", "s:nope"], "An error occurred while loading static plugin nope"),
    ];
    for (args, want) in cases {
        let mut all = vec!["--id", "x", "--control", "static", "--color", "false"];
        all.extend(&args);
        let (code, out) = run_to_end(None, DEVICE, &all);
        assert_eq!(code, Some(1), "{args:?}:\n{out}");
        assert!(out.contains("Uncaught exception reached the top of main: "), "{args:?}:\n{out}");
        assert!(out.contains(want), "{args:?}: no '{want}' in\n{out}");
    }
    // A library of the right name whose descriptor is missing: the reason is named.
    std::fs::copy(dir.path().join("libfairmq-plugin-example.so"), dir.path().join("libfairmq-plugin-other.so"))
        .unwrap();
    let (code, out) = run_to_end(
        None,
        DEVICE,
        &["--id", "x", "--control", "static", "--color", "false", "-S", &search, "-P", "other"],
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("libfairmq-plugin-other.so: no symbol fmq_plugin_other"), "{out}");
}

/// The Rust example plugin library (`examples/rusty_plugin.rs`, built beside the test binaries),
/// installed in `dir` under its plugin name.
fn install_rusty(dir: &Path) {
    let examples = Path::new(DEVICE).parent().unwrap().join("examples");
    let built = examples.join("librusty_plugin.so");
    if !built.exists() {
        // `cargo test` builds the examples; a filtered run may not have.
        let release = examples.components().any(|c| c.as_os_str() == "release");
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "fairmq", "--example", "rusty_plugin"])
            .args(release.then_some("--release"))
            .status()
            .expect("cargo builds the Rust example plugin");
        assert!(status.success());
    }
    std::fs::copy(built, dir.join("libfairmq-plugin-rusty.so")).unwrap();
}

#[test]
fn i19_a_rust_plugin_library_watches_and_is_refused_control_held_by_a_c_plugin() {
    let dir = plugin_dir();
    install_rusty(dir.path());
    let (clog, rlog) = (dir.path().join("c-log"), dir.path().join("rust-log"));
    let extra = format!(
        "-P rusty --control static --example-drive --example-log {} --rusty-log {} --rusty-take",
        clog.display(),
        rlog.display()
    );
    let mut d = device(dir.path(), &extra);
    assert_eq!(d.wait().code(), Some(0), "{}", d.seen.join("\n"));
    let rust = log_lines(&rlog);
    assert_eq!(
        rust.first().map(String::as_str),
        Some("control refused: Plugin 'rusty' is not allowed to take over control. Currently, plugin 'example' has taken control."),
        "{rust:?}"
    );
    let names: Vec<&str> = rust.iter().filter_map(|l| l.strip_prefix("state ")).collect();
    assert_eq!(names.first(), Some(&"IDLE"), "{rust:?}");
    assert_eq!(names.iter().filter(|s| **s == "RUNNING").count(), 1, "{rust:?}");
    assert_eq!(names.last(), Some(&"EXITING"), "{rust:?}");
    assert_eq!(rust.last().map(String::as_str), Some("stopped"));
    assert!(log_lines(&clog).contains(&"drove the device to EXITING".to_owned()));
    assert!(d.saw("Loaded plugin: 'rusty', version '0.3.1', maintainer 'fairmq-rs', homepage ''"));
    assert!(d.saw("[rusty] rusty plugin started"));
}

#[test]
fn i19_the_interactive_controller_steps_back_when_a_plugin_stole_control_and_ended_the_device() {
    let dir = plugin_dir();
    let log = dir.path().join("log");
    // The builtin controller takes control and waits for keys on an open stdin (a pipe).
    let mut d = device(dir.path(), &format!("--control interactive --example-steal --example-log {}", log.display()));
    assert_eq!(d.wait().code(), Some(0), "{}", d.seen.join("\n"));
    let lines = log_lines(&log);
    assert!(lines.contains(&"stole control and drove the device to EXITING".to_owned()), "{lines:?}");
    assert_eq!(states(&lines).last(), Some(&15), "{lines:?}");
    assert_eq!(lines.last().map(String::as_str), Some("stopped"));
}

#[test]
fn i19_a_failing_plugin_state_callback_takes_the_device_to_error() {
    let dir = plugin_dir();
    let log = dir.path().join("log");
    // 12: RUNNING.
    let mut d = device(
        dir.path(),
        &format!("--control static --runs 1000000 --example-fail-in 12 --example-log {}", log.display()),
    );
    assert_eq!(d.wait().code(), Some(1), "{}", d.seen.join("\n"));
    assert!(d.saw("its state callback returned 1 entering RUNNING"), "{}", d.seen.join("\n"));
    assert!(d.saw("---> ERROR"));
    assert_eq!(log_lines(&log).last().map(String::as_str), Some("stopped"));
}
