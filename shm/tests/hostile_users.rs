//! Issue 17, items 4 and 5: another local user (a real process running as `nobody`) must not be
//! able to plant a session, an object or a link that one of our transports or monitors then uses;
//! what we create is private to our user. These tests need root (to start processes as another
//! user); without it they say so and pass.

mod common;
use common::{peer_as, root_or_skip, Session};
use fairmq_shm::monitor::MonitorLock;
use fairmq_shm::{Names, RegionCallback, RegionConfig, Transport};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// uid and gid of `nobody`.
const NOBODY: u32 = 65534;

fn path(name: &str) -> PathBuf {
    Names::path(name)
}

/// Makes an empty file at `p` as `nobody`, world-writable (what a squatter leaves for its victims).
fn squat(p: &Path) {
    let status = Command::new("/bin/sh")
        .args(["-c", "umask 0 && : > \"$0\"", &p.display().to_string()])
        .uid(NOBODY)
        .gid(NOBODY)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::metadata(p).unwrap().uid(), NOBODY);
}

/// The refusal every use of another user's object must give.
fn assert_refused_as_foreign(err: &dyn std::fmt::Display, p: &Path) {
    let want = format!(
        "{} belongs to uid {NOBODY}, not to this process's uid 0: refusing to use it (another user's session, or a squatter)",
        p.display()
    );
    let msg = err.to_string();
    assert!(msg.contains(&want), "expected '{want}' in: {msg}");
}

#[test]
fn i04_a_session_created_by_another_user_is_refused() {
    if !root_or_skip("i04_a_session_created_by_another_user_is_refused", "it starts a process as nobody") {
        return;
    }
    let s = Session::new("i04squat");
    // `nobody` creates root's session by giving its shmId explicitly.
    let mut squatter = peer_as(NOBODY, &["attach", &s.name, s.names().shm_id()]);
    squatter.expect_line("attached");
    let before = s.objects();
    let mng = path(&s.names().management());
    assert_eq!(std::fs::metadata(&mng).unwrap().uid(), NOBODY);
    let err = Transport::new(&s.config("victim")).expect_err("root must not join nobody's session");
    assert_refused_as_foreign(&err, &mng);
    assert_eq!(s.objects(), before, "nothing was added to, or taken from, the squatted session");
}

#[test]
fn i04_each_object_another_user_squats_is_refused() {
    if !root_or_skip("i04_each_object_another_user_squats_is_refused", "it creates files as nobody") {
        return;
    }
    // The managed segment, under a management segment of ours.
    let s = Session::new("i04seg");
    let seg = path(&s.names().segment(0));
    squat(&seg);
    let err = Transport::new(&s.config("victim")).expect_err("a squatted segment must be refused");
    assert_refused_as_foreign(&err, &seg);

    // A region's data and its acknowledgement queue (the first automatic region id is 1024).
    for object in [Names::region, Names::region_queue] {
        let s = Session::new("i04region");
        let t = s.transport("victim");
        let p = path(&object(s.names(), 1024));
        squat(&p);
        let err = t
            .create_region(1 << 20, RegionCallback::None, &RegionConfig::default())
            .expect_err("a squatted region object must be refused");
        assert_refused_as_foreign(&err, &p);
        assert!(p.exists(), "another user's file is refused, not removed");
    }

    // The monitor lock.
    let s = Session::new("i04lock");
    let lock = path(&s.names().monitor_lock());
    squat(&lock);
    let err = MonitorLock::acquire(s.names()).expect_err("a squatted monitor lock must be refused");
    assert_refused_as_foreign(&err, &lock);
}

#[test]
fn i04_a_symbolic_link_in_place_of_an_object_is_refused() {
    // A link to a live session of ours: following it would join that session instead.
    let real = Session::new("i04real");
    let _t = real.transport("real");
    let s = Session::new("i04link");
    let mng = path(&s.names().management());
    std::os::unix::fs::symlink(path(&real.names().management()), &mng).unwrap();
    let err = Transport::new(&s.config("victim")).expect_err("a link must not be followed");
    let want = format!("{} is a symbolic link: refusing to follow it", mng.display());
    assert!(err.to_string().contains(&want), "expected '{want}' in: {err}");

    // A dangling link in place of the monitor lock: following it would create the target.
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("created-through-the-link");
    let lock = path(&s.names().monitor_lock());
    std::os::unix::fs::symlink(&target, &lock).unwrap();
    let err = MonitorLock::acquire(s.names()).expect_err("a link must not be followed");
    let want = format!("{} is a symbolic link: refusing to follow it", lock.display());
    assert!(err.to_string().contains(&want), "expected '{want}' in: {err}");
    assert!(!target.exists(), "nothing was created through the link");
}

#[test]
fn i05_every_object_is_private_to_its_user() {
    let s = Session::new("i05modes");
    let t = s.transport("owner");
    let dir = tempfile::tempdir().unwrap();
    let file_backed = RegionConfig { path: format!("{}/", dir.path().display()), ..RegionConfig::default() };
    let _r1 = t.create_region(1 << 20, RegionCallback::None, &RegionConfig::default()).unwrap();
    let _r2 = t.create_region(1 << 20, RegionCallback::None, &file_backed).unwrap();
    let _lock = MonitorLock::acquire(s.names()).unwrap().expect("no other monitor");
    let mut files: Vec<PathBuf> = s.objects().iter().map(|n| path(n)).collect();
    files.extend(std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()));
    for kind in ["_mng", "_m_0", "_rg_1024", "_rgq_1024", "_rgq_1025", "_ms"] {
        assert!(files.iter().any(|f| f.display().to_string().ends_with(kind)), "no {kind} in {files:?}");
    }
    assert!(files.iter().any(|f| f.starts_with(dir.path())), "the file-backed region is there: {files:?}");
    let uid = std::fs::metadata("/proc/self").unwrap().uid();
    for f in &files {
        let m = std::fs::symlink_metadata(f).unwrap();
        assert_eq!(m.mode() & 0o7777, 0o600, "{} has mode {:o}", f.display(), m.mode() & 0o7777);
        assert_eq!(m.uid(), uid, "{}", f.display());
    }
}

#[test]
fn i05_joining_another_users_session_says_permission_denied() {
    if !root_or_skip("i05_joining_another_users_session_says_permission_denied", "it starts a process as nobody") {
        return;
    }
    let s = Session::new("i05denied");
    let _t = s.transport("root");
    let (status, out) =
        common::run(Command::new(common::PEER).args(["attach", &s.name, s.names().shm_id()]).uid(NOBODY).gid(NOBODY));
    assert_eq!(status.code(), Some(1), "{out}");
    let want = format!(
        "{}: permission denied (it belongs to uid 0 with mode 600; this process runs as uid {NOBODY})",
        path(&s.names().management()).display()
    );
    assert!(out.contains(&want), "expected '{want}' in: {out}");
}

/// A hard link needs no permission on its target: another user can give our session's objects
/// (still ours, mode 600) a second name in a session of ours that does not exist yet. Each object
/// carries the number of the name it was made under, so the session that finds it under another
/// name refuses it instead of sharing registries, heap and acknowledgements with the first.
#[test]
fn hard_links_of_another_sessions_objects_are_refused() {
    let a = Session::new("hlinka");
    let ta = a.transport("a");
    let _ra = ta.create_region(1 << 20, RegionCallback::None, &RegionConfig::default()).unwrap();
    let refused = |err: &dyn std::fmt::Display| {
        assert!(err.to_string().contains("made under another name"), "{err}");
    };
    // The management segment.
    let b = Session::new("hlinkb");
    std::fs::hard_link(path(&a.names().management()), path(&b.names().management())).unwrap();
    refused(&Transport::new(&b.config("b")).expect_err("another session's management segment"));
    // A managed segment, under a management segment of our own.
    let c = Session::new("hlinkc");
    std::fs::hard_link(path(&a.names().segment(0)), path(&c.names().segment(0))).unwrap();
    refused(&Transport::new(&c.config("c")).expect_err("another session's segment"));
    // A region's acknowledgement queue (the first automatic region id is 1024).
    let d = Session::new("hlinkd");
    let td = d.transport("d");
    std::fs::hard_link(path(&a.names().region_queue(1024)), path(&d.names().region_queue(1024))).unwrap();
    let err = td.create_region(1 << 20, RegionCallback::None, &RegionConfig::default());
    refused(&err.expect_err("another session's acknowledgement queue"));
    // The first session goes on as before.
    assert!(ta.create_region(1 << 20, RegionCallback::None, &RegionConfig::default()).is_ok());
}
