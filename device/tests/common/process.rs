//! Device processes for tests: output collected line by line, killed and reaped on drop.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

pub const GENEROUS: Duration = Duration::from_secs(60);

pub struct Proc {
    child: Child,
    lines: Receiver<String>,
    pub seen: Vec<String>,
    pub stdin: Option<ChildStdin>,
}

/// Starts `exe` with `args`; `stdin`: `Some(stdio)` to give it (a pty, say), `None` for a pipe.
pub fn start(exe: &str, args: &[&str], stdin: Option<Stdio>) -> Proc {
    spawn(Command::new(exe).args(args), stdin, false)
}

/// [`start`] with extra environment variables and a piped stdin.
pub fn start_with_env(exe: &str, args: &[&str], env: &[(&str, &str)]) -> Proc {
    spawn(Command::new(exe).args(args).envs(env.iter().copied()), None, false)
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
    spawn(&mut cmd, None, true)
}

fn spawn(cmd: &mut Command, stdin: Option<Stdio>, with_stderr: bool) -> Proc {
    let piped = stdin.is_none();
    let mut child = cmd
        .stdin(stdin.unwrap_or_else(Stdio::piped))
        .stdout(Stdio::piped())
        .stderr(if with_stderr { Stdio::piped() } else { Stdio::inherit() })
        .spawn()
        .expect("spawn device");
    let stdin = if piped { child.stdin.take() } else { None };
    let (tx, lines) = mpsc::channel();
    let forward = |stream: Box<dyn std::io::Read + Send>, tx: mpsc::Sender<String>| {
        std::thread::spawn(move || {
            for l in BufReader::new(stream).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
    };
    if let Some(err) = child.stderr.take() {
        forward(Box::new(err), tx.clone());
    }
    forward(Box::new(child.stdout.take().unwrap()), tx);
    Proc { child, lines, seen: Vec::new(), stdin }
}

impl Proc {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits for a line containing `text`.
    pub fn expect(&mut self, text: &str) {
        let deadline = Instant::now() + GENEROUS;
        while !self.seen.iter().any(|l| l.contains(text)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("no line with '{text}'; output:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Waits until `text` appeared in at least `n` lines.
    pub fn expect_count(&mut self, text: &str, n: usize) {
        let deadline = Instant::now() + GENEROUS;
        while self.seen.iter().filter(|l| l.contains(text)).count() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("fewer than {n} lines with '{text}'; output:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Whether the process has ended (without waiting).
    pub fn has_ended(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Collects the lines printed so far, without waiting.
    pub fn drain(&mut self) {
        while let Ok(l) = self.lines.try_recv() {
            self.seen.push(l);
        }
    }

    /// How many lines contain `text`.
    pub fn count(&self, text: &str) -> usize {
        self.seen.iter().filter(|l| l.contains(text)).count()
    }

    pub fn saw(&self, text: &str) -> bool {
        self.seen.iter().any(|l| l.contains(text))
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), sig).unwrap();
    }

    pub fn send_keys(&mut self, keys: &str) {
        let s = self.stdin.as_mut().expect("piped stdin");
        s.write_all(keys.as_bytes()).unwrap();
        s.flush().unwrap();
    }

    /// SIGKILLs the process and reaps it.
    pub fn kill(&mut self) {
        self.signal(nix::sys::signal::Signal::SIGKILL);
        self.wait();
    }

    /// Waits for the end (generous timeout) and collects the rest of the output.
    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + GENEROUS;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            while let Ok(l) = self.lines.try_recv() {
                self.seen.push(l);
            }
            assert!(Instant::now() < deadline, "device did not end; output:\n{}", self.seen.join("\n"));
            std::thread::sleep(Duration::from_millis(10));
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(300)) {
            self.seen.push(l);
        }
        status
    }
}

/// Runs `exe` (as user `user`, if given) to its end; returns its exit code and its output, stderr
/// included.
pub fn run_to_end(user: Option<u32>, exe: &str, args: &[&str]) -> (Option<i32>, String) {
    let mut p = start_as(user, exe, args);
    let code = p.wait().code();
    (code, p.seen.join("\n"))
}

/// Polls `done` until it holds (generous timeout, then fails naming `what`).
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + GENEROUS;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
