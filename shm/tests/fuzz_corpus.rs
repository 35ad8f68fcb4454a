//! Replays the seed corpora of the shared-memory fuzz targets and every crash file a fuzzer found
//! (`fuzz/corpus/<target>`, `fuzz/artifacts/<target>`) through the targets' own entry points, so
//! CI exercises them without a fuzzer.
//!
//! `FAIRMQ_FUZZ_WRITE_SEEDS=1 cargo test -p fairmq-shm --test fuzz_corpus` (re)writes the seeds
//! made by the encoder, after a change of the metadata format.

use fairmq_shm::testing::fuzzing;
use std::path::PathBuf;

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

fn replay(target: &str, run: fn(&[u8])) {
    let n = fuzzing::replay(&fuzz_dir(), target, run);
    assert!(n > 0, "no seed corpus for {target} in {}", fuzz_dir().display());
}

#[test]
fn meta_record() {
    replay("meta_record", fuzzing::meta_record);
}

#[test]
fn meta_batch() {
    replay("meta_batch", fuzzing::meta_batch);
}

#[test]
fn region_acks() {
    replay("region_acks", fuzzing::region_acks);
}

#[test]
fn lane_words() {
    replay("lane_words", fuzzing::lane_words);
}

#[test]
fn socket_frames() {
    replay("socket_frames", fuzzing::socket_frames);
}

#[test]
fn seeds_are_in_the_corpus() {
    let write = std::env::var_os("FAIRMQ_FUZZ_WRITE_SEEDS").is_some_and(|v| v == "1");
    for (target, name, bytes) in fuzzing::seeds() {
        let path = fuzz_dir().join("corpus").join(target).join(format!("seed-{name}"));
        if write {
            std::fs::create_dir_all(path.parent().expect("has a parent")).expect("creating the corpus directory");
            std::fs::write(&path, &bytes).expect("writing a seed");
        }
        let stored = std::fs::read(&path).unwrap_or_default();
        assert_eq!(stored, bytes, "{} is missing or stale: rerun with FAIRMQ_FUZZ_WRITE_SEEDS=1", path.display());
    }
}
