//! Writing to the console without ever failing a device: when stdout is closed or broken (its
//! reader left a pipe, `| head`), the text is lost from then on, as C++ FairMQ's is (its streams go
//! bad and stay quiet). A bare `println!` panics there, and the panic's own report, logged to the
//! same stdout, aborted the process.
//!
//! The print macros are kept (the test harness captures what they write); the one panic of a
//! broken stdout is caught, kept out of the panic hook's log, and ends console output.

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
