//! Writing to the console without ever failing a device.
//!
//! Stdout may be closed or broken: its reader may have left a pipe, as `| head` does. The text is
//! then lost from that point on. C++ FairMQ behaves the same way: its streams go bad and stay
//! quiet. A bare `println!` panics instead, and the panic's report, written to the same stdout,
//! aborted the process.
//!
//! [`text`] and [`line`] still use the print macros, because the test harness captures what they
//! write. They catch the one panic of a broken stdout and keep it out of the panic hook's log
//! (see [`writing`]). After it, they write nothing more.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout failed: nothing is written to it any more.
static BROKEN: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread is inside a console write (its panic is a broken stdout, not a bug).
    static WRITING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the panic being reported is a console write's (the panic hook stays quiet for it).
pub(crate) fn writing() -> bool {
    WRITING.with(Cell::get)
}

fn write(print: impl FnOnce() + std::panic::UnwindSafe) {
    if BROKEN.load(Ordering::Relaxed) {
        return;
    }
    WRITING.with(|w| w.set(true));
    let written = std::panic::catch_unwind(print).is_ok();
    WRITING.with(|w| w.set(false));
    if !written {
        BROKEN.store(true, Ordering::Relaxed);
    }
}

/// Writes `text` to stdout as it is.
pub(crate) fn text(text: &str) {
    write(|| print!("{text}"));
}

/// Writes `text` and a newline to stdout.
pub(crate) fn line(text: &str) {
    write(|| println!("{text}"));
}
