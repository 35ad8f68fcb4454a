//! Issue 17, item 8: sizes a segment cannot hold are clear errors, never a wrapped size or a
//! panic.

mod common;
use common::Session;

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
    t.segment().check().unwrap();
}
