//! Device processes for tests: the shared process helper (output collected line by line, killed
//! and reaped on drop), started the ways these tests start devices.

use fairmq_shm::testing::process::Start;
#[allow(unused_imports)] // each test binary uses its own part
pub use fairmq_shm::testing::process::{wait_until, Process as Proc, GENEROUS};
use std::process::{Command, Stdio};

/// Starts `exe` with `args`; `stdin`: `Some(stdio)` to give it (a pty, say), `None` for a pipe.
pub fn start(exe: &str, args: &[&str], stdin: Option<Stdio>) -> Proc {
    Proc::start(Command::new(exe).args(args), Start { stdin, with_stderr: false })
}

/// [`start`] with extra environment variables and a piped stdin.
pub fn start_with_env(exe: &str, args: &[&str], env: &[(&str, &str)]) -> Proc {
    Proc::start(Command::new(exe).args(args).envs(env.iter().copied()), Start::default())
}

/// [`start`] with a piped stdin, as user and group `id` if given (only root may), and with stderr
/// collected among the lines (a panic's message, say).
pub fn start_as(id: Option<u32>, exe: &str, args: &[&str]) -> Proc {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(exe);
    cmd.args(args);
    if let Some(id) = id {
        cmd.uid(id).gid(id);
    }
    Proc::start(&mut cmd, Start { stdin: None, with_stderr: true })
}

/// Runs `exe` (as user `user`, if given) to its end; returns its exit code and its output, stderr
/// included.
pub fn run_to_end(user: Option<u32>, exe: &str, args: &[&str]) -> (Option<i32>, String) {
    let mut p = start_as(user, exe, args);
    let code = p.wait().code();
    (code, p.seen.join("\n"))
}
