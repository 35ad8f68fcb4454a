//! The terminal for interactive control: single keys without Enter, no echo.
//!
//! [`RawMode`] switches stdin to this mode while it lives, if stdin is a terminal.

use nix::sys::termios::{self, LocalFlags, SetArg, Termios};
use std::os::fd::AsFd;
use std::time::Duration;

/// Non-canonical, no-echo mode on stdin while alive (nothing happens if stdin is not a terminal).
#[derive(Debug)]
pub struct RawMode(Option<Termios>);

impl RawMode {
    /// Switches stdin to single-key mode if it is a terminal.
    pub fn enable() -> RawMode {
        let stdin = std::io::stdin();
        let Ok(saved) = termios::tcgetattr(stdin.as_fd()) else { return RawMode(None) };
        let mut raw = saved.clone();
        raw.local_flags.remove(LocalFlags::ICANON | LocalFlags::ECHO);
        if termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &raw).is_err() {
            return RawMode(None);
        }
        RawMode(Some(saved))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(saved) = &self.0 {
            let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, saved);
        }
    }
}

/// Whether stdin has input (or reached its end) within `timeout`.
pub fn stdin_ready(timeout: Duration) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    let ms = PollTimeout::try_from(timeout.as_millis().min(60_000) as i32).unwrap_or(PollTimeout::NONE);
    matches!(poll(&mut fds, ms), Ok(n) if n > 0)
}

/// Reads one byte straight from the stdin descriptor: std's `Stdin` buffers, and a buffered key
/// would never wake the poll again.
pub fn read_byte(b: &mut [u8; 1]) -> nix::Result<usize> {
    nix::unistd::read(std::io::stdin().as_fd(), b)
}
