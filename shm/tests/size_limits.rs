//! Issue 17, items 7 and 8: sizes a file system or a segment cannot hold are clear errors, never a
//! SIGBUS later, a wrapped size or a panic.

mod common;
use common::{root_or_skip, run, Session, PEER};
use fairmq_shm::{RegionCallback, RegionConfig, Transport};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

/// Free bytes of the file system holding `dir` (`stat -f`: available blocks times block size).
fn available(dir: &Path) -> u64 {
    let out = Command::new("stat").args(["-f", "-c", "%a %S"]).arg(dir).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut it = text.split_whitespace().map(|n| n.parse::<u64>().unwrap());
    it.next().unwrap() * it.next().unwrap()
}

/// A tmpfs of `size` mounted on a temporary directory, unmounted on drop (also when a test fails).
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// `None` (with the reason printed) where mounting is not allowed.
    fn mount(test: &str, size: &str) -> Option<Tmpfs> {
        if !root_or_skip(test, "it mounts a small tmpfs") {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let (status, out) =
            run(Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(dir.path()));
        if !status.success() {
            println!("skipped {test}: mounting a tmpfs failed: {out}");
            return None;
        }
        Some(Tmpfs(dir))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn i07_a_segment_larger_than_the_free_space_of_dev_shm_is_refused() {
    let s = Session::new("i07big");
    let mut c = s.config("big");
    // A terabyte, or more than /dev/shm holds if it is larger.
    c.segment_size = (1u64 << 40).max(available(Path::new("/dev/shm")) + (1 << 30));
    let err = Transport::new(&c).expect_err("a segment larger than /dev/shm must be refused").to_string();
    for part in ["--shm-segment-size", &format!("{} bytes do not fit in /dev/shm", c.segment_size), "bytes available"] {
        assert!(err.contains(part), "'{part}' missing in: {err}");
    }
    assert!(s.objects().is_empty(), "nothing is left behind: {:?}", s.objects());
}

#[test]
fn i07_a_segment_that_fits_is_reserved_when_it_is_created() {
    let s = Session::new("i07reserved");
    let t = s.transport("reserved");
    let seg = Path::new("/dev/shm").join(s.names().segment(0));
    let m = std::fs::metadata(&seg).unwrap();
    assert_eq!(m.len(), fairmq_shm::testing::segment(&t).size());
    assert!(m.blocks() * 512 >= m.len(), "{} of {} bytes allocated: the segment is sparse", m.blocks() * 512, m.len());
}

#[test]
fn i07_in_a_small_dev_shm_a_segment_that_does_not_fit_is_an_error_not_a_sigbus() {
    let test = "i07_in_a_small_dev_shm_a_segment_that_does_not_fit_is_an_error_not_a_sigbus";
    if !root_or_skip(test, "it mounts a tmpfs on /dev/shm in a private mount namespace") {
        return;
    }
    // In a private mount namespace, /dev/shm is a 100 MiB tmpfs. A peer's 64 MiB segment fits and
    // is reserved; another peer still joins that session (its segment exists); a second session's
    // 64 MiB segment cannot fit, and says so (without the reservation it was accepted, and both
    // processes died of SIGBUS as their segments filled).
    let script = r#"
        mount -t tmpfs -o size=100m tmpfs /dev/shm || exit 77
        "$0" attach first > /dev/shm/first.out 2>&1 &
        first=$!
        for i in $(seq 1 6000); do grep -q attached /dev/shm/first.out && break; sleep 0.01; done
        grep -q attached /dev/shm/first.out || { cat /dev/shm/first.out; exit 78; }
        "$0" allocloop first 1
        echo "joining exited $?"
        "$0" allocloop second 1
        echo "second exited $?"
        kill $first
        wait
    "#;
    let (status, out) =
        run(Command::new("unshare").args(["--mount", "--propagation", "private", "sh", "-c", script, PEER]));
    match status.code() {
        Some(77) => return println!("skipped {test}: mounting a tmpfs on /dev/shm failed: {out}"),
        Some(0) => {}
        _ => panic!("{status}: {out}"),
    }
    assert!(out.contains("joining exited 0"), "a peer joins the existing session: {out}");
    assert!(out.contains("second exited 1"), "the second session's peer fails (no signal): {out}");
    let want = format!("{} bytes do not fit in /dev/shm, which has", 64 << 20);
    assert!(out.contains(&want) && out.contains("--shm-segment-size"), "expected '{want}' in: {out}");
}

#[test]
fn i07_a_file_backed_region_that_does_not_fit_its_file_system_is_refused() {
    let Some(fs) = Tmpfs::mount("i07_a_file_backed_region_that_does_not_fit_its_file_system_is_refused", "64m") else {
        return;
    };
    let s = Session::new("i07region");
    let t = s.transport("regions");
    let cfg = RegionConfig { path: format!("{}/", fs.path().display()), ..RegionConfig::default() };
    let err = t.create_region(200 << 20, RegionCallback::None, &cfg).expect_err("200 MiB in a 64 MiB tmpfs");
    let want = format!("{} bytes do not fit in {}", 200 << 20, fs.path().display());
    assert!(err.to_string().contains(&want), "expected '{want}' in: {err}");
    // One that fits takes its room at once: the next one no longer fits.
    let free = available(fs.path());
    let first = t.create_region(40 << 20, RegionCallback::None, &cfg).unwrap();
    assert!(available(fs.path()) + (40 << 20) <= free, "the first region's pages are reserved");
    let err = t.create_region(40 << 20, RegionCallback::None, &cfg).expect_err("no room for a second one");
    assert!(err.to_string().contains(&format!("{} bytes do not fit", 40 << 20)), "{err}");
    drop(first);
    assert_eq!(std::fs::read_dir(fs.path()).unwrap().count(), 0, "every region file is gone");
}

#[test]
fn i08_a_message_larger_than_any_segment_is_an_error_not_a_wrap() {
    let s = Session::new("i08msg");
    let t = s.transport("huge");
    for (size, align) in [(usize::MAX, 0), (usize::MAX - 31, 0), (usize::MAX - 4095, 4096), (usize::MAX / 2, 16)] {
        let err = t.new_message_aligned(size, align).expect_err("no segment holds this").to_string();
        assert!(err.contains("exceeds segment size"), "{size} aligned {align}: {err}");
    }
    // The segment is unharmed.
    let m = t.new_message_with_size(1000).unwrap();
    assert_eq!(m.size(), 1000);
    fairmq_shm::testing::segment(&t).check().unwrap();
}

/// FairMQ takes any segment size (its tests zero and lock a 16384-byte segment): a segment asked
/// for below the smallest file gets a heap of the size asked for, and a 10000-byte message fits in
/// a 16384-byte one, zeroed as asked (both the every-time and the on-creation flags); 0 is refused.
#[test]
fn a_small_segment_holds_what_it_was_asked_for_and_is_zeroed() {
    for on_creation in [false, true] {
        let s = Session::new(if on_creation { "small-c" } else { "small" });
        let mut c = s.config("small");
        c.segment_size = 16384;
        if on_creation {
            c.zero_segment_on_creation = true;
            c.mlock_segment_on_creation = true;
        } else {
            c.zero_segment = true;
            c.mlock_segment = true;
        }
        let t = Transport::new(&c).expect("a 16384-byte segment");
        let m = t.new_message_with_size(10_000).expect("10000 bytes in a 16384-byte heap");
        assert!(m.data().iter().all(|&b| b == 0), "zeroed");
        assert!(t.new_message_with_size(20_000).is_err(), "the heap is about the size asked for");
    }
    assert_eq!(fairmq_shm::file_size_for(16384), fairmq_shm::file_size_for(16384) / 16 * 16);
    assert!(fairmq_shm::file_size_for(1) >= fairmq_shm::MIN_SEGMENT_SIZE);
    assert_eq!(fairmq_shm::file_size_for(1 << 20), 1 << 20, "from the minimum on, the size asked for");
    let s = Session::new("zero");
    let mut c = s.config("zero");
    c.segment_size = 0;
    assert!(Transport::new(&c).is_err(), "a segment of 0 bytes is refused");
}
