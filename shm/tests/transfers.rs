//! The shared-memory transport in one process: patterns, zero-copy sharing, message API, blocks
//! kept by timed-out sends, out-of-memory policy, and session clean-up. The contract both
//! transports share (timeouts, interruption, counters, patterns) is the fairmq crate's
//! conformance suite.

mod common;
use common::*;
use fairmq_shm::testing::meta::Record;
use fairmq_zmq::{AttachOptions, Method, SocketType, TransferCode, TransferError};
use std::time::{Duration, Instant};

const LONG: i32 = 10_000;

/// One address per protocol for the endpoint `what`.
fn addresses(s: &Session, what: &str) -> [String; 3] {
    [format!("inproc://{}-{what}", s.name), s.ipc(what), "tcp://127.0.0.1:*".to_owned()]
}

#[test]
fn push_pull_pair_req_rep_over_every_protocol() {
    let s = Session::new("patterns");
    let t = s.transport("p");
    let [push_pull, pair, req_rep] = ["x", "y", "z"].map(|what| addresses(&s, what));
    for (protocol, addr) in push_pull.iter().enumerate() {
        let (pull, push) = linked(&t, SocketType::Pull, SocketType::Push, addr);
        for i in 0..50u8 {
            let mut m = t.new_message_from_slice(&[i; 300]).unwrap();
            assert_eq!(push.send(&mut m, LONG).unwrap(), 300);
            assert!(m.is_empty(), "a sent message is empty: the receiver owns the block");
        }
        for i in 0..50u8 {
            let mut r = t.new_message();
            assert_eq!(pull.receive(&mut r, LONG).unwrap(), 300);
            assert_eq!(r.data(), &[i; 300][..], "{addr}");
        }
        let (a, b) = linked(&t, SocketType::Pair, SocketType::Pair, &pair[protocol]);
        b.send(&mut t.new_message_from_slice(b"ping").unwrap(), LONG).unwrap();
        let mut r = t.new_message();
        a.receive(&mut r, LONG).unwrap();
        assert_eq!(r.data(), b"ping");
        a.send(&mut r, LONG).unwrap();
        b.receive(&mut r, LONG).unwrap();
        assert_eq!(r.data(), b"ping", "the same block travelled back");
        let (rep, req) = linked(&t, SocketType::Rep, SocketType::Req, &req_rep[protocol]);
        req.send(&mut t.new_message_from_slice(b"question").unwrap(), LONG).unwrap();
        rep.receive(&mut r, LONG).unwrap();
        assert_eq!(r.data(), b"question");
        rep.send(&mut t.new_message_from_slice(b"answer").unwrap(), LONG).unwrap();
        req.receive(&mut r, LONG).unwrap();
        assert_eq!(r.data(), b"answer");
    }
    drop(t);
    assert!(s.objects().is_empty(), "last transport removed the session: {:?}", s.objects());
}

#[test]
fn multipart_and_empty_messages() {
    let s = Session::new("multi");
    let t = s.transport("m");
    let (pull, push) = linked(&t, SocketType::Pull, SocketType::Push, &s.ipc("m"));
    let mut parts =
        vec![t.new_message(), t.new_message_from_slice(b"abc").unwrap(), t.new_message_with_size(100_000).unwrap()];
    assert_eq!(push.send_parts(&mut parts, LONG).unwrap(), 100_003);
    assert!(parts.iter().all(|p| p.is_empty()));
    let mut got = Vec::new();
    assert_eq!(pull.receive_parts(&mut got, LONG).unwrap(), 100_003);
    assert_eq!(got.iter().map(|m| m.size()).collect::<Vec<_>>(), [0, 3, 100_000]);
    assert_eq!(got[1].data(), b"abc");
    assert!(got[0].data_ptr().is_null());
    // One part travels as a single record: a single receive takes it.
    push.send_parts(&mut [t.new_message_from_slice(b"one").unwrap()], LONG).unwrap();
    let mut r = t.new_message();
    pull.receive(&mut r, LONG).unwrap();
    assert_eq!(r.data(), b"one");
    // A multipart received by a single receive is an error, and its blocks are not leaked.
    let free_before = {
        t.flush();
        t.segment_stats().free
    };
    push.send_parts(&mut [t.new_message_with_size(5000).unwrap(), t.new_message_with_size(5000).unwrap()], LONG)
        .unwrap();
    let e = pull.receive(&mut r, LONG).unwrap_err();
    assert_eq!(e.code(), fairmq_zmq::TransferCode::Error, "{e}");
    t.flush();
    assert_eq!(t.segment_stats().free, free_before);
    assert!(matches!(push.send_parts(&mut [], LONG), Err(TransferError::EmptyMultipart)));
    let c = push.counters();
    assert_eq!((c.messages_tx, c.bytes_tx), (3, 100_003 + 3 + 10_000), "payload bytes, a multipart once");
}

#[test]
fn copies_share_the_block_and_the_last_holder_frees_it() {
    let s = Session::new("copy");
    let t = s.transport("c");
    let free0 = t.segment_stats().free;
    let mut a = t.new_message_from_slice(b"shared bytes").unwrap();
    let mut b = t.new_message();
    b.copy_from(&a).unwrap();
    assert_eq!(a.data_ptr(), b.data_ptr(), "zero-copy");
    assert_eq!((a.refcount(), b.refcount()), (2, 2));
    // Writing through a shared message copies first: the other holder keeps its bytes.
    a.data_mut().unwrap()[0] = b'S';
    assert_ne!(a.data_ptr(), b.data_ptr());
    assert_eq!((a.data(), b.data()), (&b"Shared bytes"[..], &b"shared bytes"[..]));
    assert_eq!((a.refcount(), b.refcount()), (1, 1));
    // Sending a copy: the receiver holds a reference to the same block.
    let mut c = t.new_message();
    c.copy_from(&b).unwrap();
    let (pull, push) = linked(&t, SocketType::Pull, SocketType::Push, &format!("inproc://{}", s.name));
    push.send(&mut c, LONG).unwrap();
    let mut r = t.new_message();
    pull.receive(&mut r, LONG).unwrap();
    assert_eq!(r.data_ptr(), b.data_ptr());
    assert_eq!(r.refcount(), 2);
    // A receiver that drops its copy first leaves the block to the other holders.
    let mut d = t.new_message();
    d.copy_from(&b).unwrap();
    push.send(&mut d, LONG).unwrap();
    let mut r2 = t.new_message();
    pull.receive(&mut r2, LONG).unwrap();
    assert_eq!(r2.refcount(), 3);
    drop(r2);
    t.flush();
    let mut fresh = t.new_message_from_slice(b"fresh bytes!").unwrap();
    fresh.data_mut().unwrap().fill(b'x');
    assert_ne!(fresh.data_ptr(), b.data_ptr(), "the block was not freed while held");
    assert_eq!((b.data(), r.refcount()), (&b"shared bytes"[..], 2));
    drop(fresh);
    drop(b);
    assert_eq!(r.refcount(), 1);
    drop((a, r));
    drop((pull, push)); // and their lane
    t.flush();
    assert_eq!(t.segment_stats().free, free0, "every block came back");
    t.check_segment().unwrap();
}

#[test]
fn message_api_resize_rebuild_align() {
    let s = Session::new("api");
    let t = s.transport("a");
    let mut m = t.new_message_from_slice(b"ABCDEF").unwrap();
    assert!(m.set_used_size(5) && m.set_used_size(5) && !m.set_used_size(7));
    assert_eq!(m.data(), b"ABCDE");
    assert!(m.set_used_size(2));
    assert_eq!(m.data(), b"AB");
    let mut big = t.new_message_with_size(1_000_000).unwrap();
    let used = t.segment_stats().used;
    assert!(big.set_used_size(100));
    assert!(t.segment_stats().used < used - 900_000, "the tail went back to the segment");
    assert!(big.set_used_size(0) && big.is_empty());
    m.rebuild();
    assert!(m.is_empty());
    m.rebuild_with_size(100, 0).unwrap();
    assert_eq!(m.size(), 100);
    m.rebuild_from_slice(b"asdf").unwrap();
    assert_eq!(m.data(), b"asdf");
    for align in [64usize, 256, 4096] {
        let a = t.new_message_aligned(100, align).unwrap();
        assert_eq!(a.data_ptr() as usize % align, 0);
        let mut c = t.new_message();
        c.copy_from(&a).unwrap();
        assert_eq!(c.data_ptr() as usize % align, 0);
    }
    // User buffer with free callback: copied, then released at once.
    use std::sync::atomic::{AtomicUsize, Ordering};
    static FREED: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: unsafe to call because `data` must be the 4-byte boxed slice leaked below (contract of
    // a free callback); only the transport calls it, once per buffer.
    unsafe extern "C" fn ffn(data: *mut std::ffi::c_void, hint: *mut std::ffi::c_void) {
        assert_eq!(hint as usize, 7);
        // SAFETY: the buffer is the leaked boxed slice below, released exactly once.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(data.cast::<u8>(), 4)) });
        FREED.fetch_add(1, Ordering::SeqCst);
    }
    let buf = Box::into_raw(b"wxyz".to_vec().into_boxed_slice()).cast::<u8>();
    // SAFETY: valid for 4 bytes, released by ffn.
    let u = unsafe { t.new_message_from_raw_parts(buf, 4, Some(ffn), 7 as *mut _) }.unwrap();
    assert_eq!(FREED.load(Ordering::SeqCst), 1);
    assert_eq!(u.data(), b"wxyz");
    // An empty buffer is released too (nothing to copy, but it is the message's to release).
    let buf = Box::into_raw(b"wxyz".to_vec().into_boxed_slice()).cast::<u8>();
    // SAFETY: valid for 4 bytes (0 are read), released by ffn.
    let e = unsafe { t.new_message_from_raw_parts(buf, 0, Some(ffn), 7 as *mut _) }.unwrap();
    assert_eq!(FREED.load(Ordering::SeqCst), 2);
    assert!(e.is_empty());
}

/// A timed-out send leaves the message's block allocated, as the caller still holds it (what
/// timeouts keep and return is checked on both transports in the fairmq crate's conformance
/// suite).
#[test]
fn timeouts_keep_the_message_and_its_block() {
    let s = Session::new("timeout");
    let t = s.transport("t");
    let push = t.socket(SocketType::Push, "out").unwrap();
    push.bind(&s.ipc("nobody")).unwrap();
    let mut m = t.new_message_from_slice(b"keep").unwrap();
    let used = t.segment_stats().used;
    for timeout in [0, 100] {
        assert!(matches!(push.send(&mut m, timeout), Err(TransferError::Timeout)));
        assert!(matches!(push.send_parts(std::slice::from_mut(&mut m), timeout), Err(TransferError::Timeout)));
    }
    assert_eq!(t.segment_stats().used, used, "nothing freed");
}

#[test]
fn out_of_memory_follows_the_policy() {
    let s = Session::new("oom");
    let mut c = s.config("o");
    c.segment_size = 1 << 20;
    let t = fairmq_shm::Transport::new(&c).unwrap();
    let e = t.new_message_with_size(2 << 20).unwrap_err();
    assert!(matches!(e, fairmq_shm::ShmError::TooLarge { .. }), "{e}");
    assert!(e.to_string().starts_with("Requested message size ("), "{e}");
    let mut hold = Vec::new();
    let err = loop {
        match t.new_message_with_size(100_000) {
            Ok(m) => hold.push(m),
            Err(e) => break e,
        }
    };
    assert!(matches!(err, fairmq_shm::ShmError::BadAlloc { size: 100_000, .. }), "{err}");
    assert!(err.to_string().starts_with("shmem: could not create a message of size 100000"));
    assert!(hold.len() >= 8);
    drop(t);

    // Bounded retries: 3 attempts 30 ms apart, then the error.
    let mut c3 = c.clone();
    c3.bad_alloc = fairmq_shm::BadAllocPolicy::from_options(true, Some(3), 30);
    let t3 = fairmq_shm::Transport::new(&c3).unwrap();
    let start = Instant::now();
    assert!(t3.new_message_with_size(100_000).is_err());
    assert!(start.elapsed() >= Duration::from_millis(60));

    // Retry forever: a free in another thread makes room and wakes the waiter.
    let mut cf = c.clone();
    cf.bad_alloc = fairmq_shm::BadAllocPolicy::from_options(false, None, 10_000);
    let tf = fairmq_shm::Transport::new(&cf).unwrap();
    let one = hold.pop().unwrap();
    let freer = std::thread::spawn(move || {
        // Most likely while the allocation waits for room: the free must wake it.
        std::thread::sleep(Duration::from_millis(100));
        drop(one);
    });
    let start = Instant::now();
    let got = tf.new_message_with_size(100_000);
    assert!(got.is_ok(), "{got:?}");
    assert!(start.elapsed() < Duration::from_secs(9), "woken by the free, not by the 10 s interval");
    freer.join().unwrap();

    // Retry forever, interrupted: the allocation gives up with the out-of-memory error.
    let tf2 = tf.clone();
    let h = std::thread::spawn(move || {
        // Most likely while the allocation waits for room.
        std::thread::sleep(Duration::from_millis(100));
        tf2.interrupt();
    });
    let e = tf.new_message_with_size(100_000).unwrap_err();
    assert!(matches!(e, fairmq_shm::ShmError::BadAlloc { .. }), "{e}");
    h.join().unwrap();
    drop(got);
}

/// A receiver keeps the blocks it freed for a moment (to free them in one locked batch); one that
/// polls and finds nothing gives them back, as one that blocks does before it sleeps, so they do
/// not stay out of reach of other processes' allocations.
#[test]
fn a_receiver_that_polls_and_finds_nothing_gives_back_what_it_freed() {
    let s = Session::new("pollfree");
    let (sender, receiver) = (s.transport("sender"), s.transport("receiver"));
    let pull = receiver.socket(SocketType::Pull, "in").unwrap();
    let bound = pull.attach(&s.ipc("pollfree"), &AttachOptions::new(Some(Method::Bind))).unwrap();
    let push = sender.socket(SocketType::Push, "out").unwrap();
    push.connect(&bound).unwrap();
    for _ in 0..3 {
        push.send(&mut sender.new_message_with_size(100_000).unwrap(), 5000).unwrap();
    }
    sender.flush();
    let mut m = receiver.new_message();
    for _ in 0..3 {
        pull.receive(&mut m, 5000).unwrap();
        m = receiver.new_message(); // drops the received one
    }
    let available = |t: &fairmq_shm::Transport| {
        let st = t.segment_stats();
        st.free + st.cached
    };
    let held = available(&sender);
    assert_eq!(pull.receive(&mut m, 0).unwrap_err().code(), TransferCode::Timeout);
    assert!(available(&sender) >= held + 300_000, "the three blocks came back: {} -> {}", held, available(&sender));
}

#[test]
fn sessions_are_shared_counted_and_removed_by_the_last_transport() {
    let s = Session::new("session");
    let a = s.transport("a");
    let b = s.transport("b");
    assert_eq!(a.attached_transports(), 2);
    assert_eq!(a.shm_id(), fairmq_shm::shm_id(&s.name));
    let names = s.objects();
    assert!(names.iter().any(|n| n.ends_with("_mng")) && names.iter().any(|n| n.ends_with("_m_0")), "{names:?}");
    drop(a);
    assert_eq!(s.objects(), names, "another transport is attached");
    drop(b);
    assert!(s.objects().is_empty());
    // With no_cleanup the objects stay (the session guard removes them).
    let mut c = s.config("k");
    c.no_cleanup = true;
    drop(fairmq_shm::Transport::new(&c).unwrap());
    assert_eq!(s.objects().len(), 2);
    // A new transport reuses them.
    let again = fairmq_shm::Transport::new(&c).unwrap();
    assert_eq!(again.attached_transports(), 1);
}

#[test]
fn explicit_shm_id_and_segment_id() {
    let s = Session::new("ids");
    let mut c = s.config("x");
    let n = fairmq_shm::shm_id_number(&fairmq_shm::shm_id(&s.name)).unwrap();
    c.shm_id = Some(n);
    c.session = "ignored-when-shmid-given".into();
    let t = fairmq_shm::Transport::new(&c).unwrap();
    assert_eq!(t.shm_id(), fairmq_shm::shm_id(&s.name));
    let mut c2 = s.config("y");
    c2.segment_id = 3;
    let t2 = fairmq_shm::Transport::new(&c2).unwrap();
    let m = t2.new_message_from_slice(b"in segment 3").unwrap();
    assert!(matches!(m.record(), Record::Block { segment: 3, .. }));
    // A transport allocating in segment 0 receives a block of segment 3 (mapped on first use).
    let (pull, push) = linked(&t, SocketType::Pull, SocketType::Push, &s.ipc("seg"));
    let push3 = t2.socket(SocketType::Push, "p3").unwrap();
    push3.connect(&s.ipc("seg")).unwrap();
    drop(push);
    let mut m = m;
    push3.send(&mut m, LONG).unwrap();
    let mut r = t.new_message();
    pull.receive(&mut r, LONG).unwrap();
    assert_eq!(r.data(), b"in segment 3");
}

#[test]
fn zero_and_lock_options() {
    let s = Session::new("zero");
    let mut c = s.config("z");
    c.segment_size = 1 << 20;
    c.zero_segment = true;
    c.mlock_segment = true;
    let t = fairmq_shm::Transport::new(&c).unwrap();
    let mut m = t.new_message_with_size(10_000).unwrap();
    m.data_mut().unwrap().fill(0xab);
    drop(m);
    drop(t);
    let mut c2 = c.clone();
    c2.mlock_segment = false;
    c2.no_cleanup = true;
    let t2 = fairmq_shm::Transport::new(&c2).unwrap();
    let m = t2.new_message_with_size(10_000).unwrap();
    assert!(m.data().iter().all(|&b| b == 0), "a new message of a zeroed segment reads as zeros");
}

/// Every part of a multipart holds a hand-over ticket until it is received: one of more parts than
/// the segment has tickets fails at once, naming the limit, instead of waiting forever; one within
/// the limit goes through (paths without a lane, where records travel with tickets).
#[test]
fn a_multipart_of_more_parts_than_tickets_fails_at_once_naming_the_limit() {
    let s = Session::new("tickets");
    let mut c = s.config("t");
    c.lanes = false;
    c.segment_size = 4 << 20; // 512 tickets
    let t = fairmq_shm::Transport::new(&c).unwrap();
    let (pull, push) = linked(&t, SocketType::Pull, SocketType::Push, &s.ipc("t"));
    let mut parts: Vec<_> = (0..600).map(|_| t.new_message_from_slice(b"x").unwrap()).collect();
    let started = Instant::now();
    let e = push.send_parts(&mut parts, -1).expect_err("600 parts need 600 tickets of 512");
    assert!(started.elapsed() < Duration::from_secs(5), "at once, not after a wait");
    let text = e.to_string();
    assert!(text.contains("600 parts") && text.contains("has 512") && text.contains("--shm-segment-size"), "{text}");
    assert!(parts.iter().all(|p| p.size() == 1), "the parts stay with the sender");
    let mut fewer: Vec<_> = parts.drain(..500).collect();
    assert_eq!(push.send_parts(&mut fewer, LONG).unwrap(), 500);
    let mut got = Vec::new();
    assert_eq!(pull.receive_parts(&mut got, LONG).unwrap(), 500);
    assert_eq!(got.len(), 500);
}
