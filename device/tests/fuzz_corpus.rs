//! Replays the seed corpora of the configuration fuzz targets and every crash file a fuzzer found
//! (`fuzz/corpus/<target>`, `fuzz/artifacts/<target>`) through the targets' own entry points, so
//! CI exercises them without a fuzzer.

use fairmq::fuzzing;
use std::path::PathBuf;

fn replay(target: &str, run: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let n = fairmq_shm::testing::fuzzing::replay(&dir, target, run);
    assert!(n > 0, "no seed corpus for {target} in {}", dir.display());
}

#[test]
fn channel_config() {
    replay("channel_config", fuzzing::channel_config);
}

#[test]
fn mq_config() {
    replay("mq_config", fuzzing::mq_config);
}

#[test]
fn command_line() {
    replay("command_line", fuzzing::command_line);
}
