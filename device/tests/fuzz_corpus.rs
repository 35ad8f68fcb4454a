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

#[test]
fn metrics_request() {
    replay("metrics_request", fuzzing::metrics_request);
}

proptest::proptest! {
    /// Beyond the corpus: arbitrary bytes, and valid requests cut or spliced with arbitrary bytes.
    #[test]
    fn metrics_requests_of_any_bytes(
        junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..20_000),
        cut in 0usize..64,
    ) {
        fuzzing::metrics_request(&junk);
        let mut spliced = b"GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n".to_vec();
        spliced.truncate(cut);
        spliced.extend_from_slice(&junk);
        fuzzing::metrics_request(&spliced);
    }
}
