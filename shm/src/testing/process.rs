//! Processes a test starts: their output collected line by line, every wait bounded by a
//! generous timeout, and killed and reaped when dropped (also when the test fails).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// How long a test waits for what must happen: long enough for a loaded machine, short enough to
/// end a hung test.
pub const GENEROUS: Duration = Duration::from_secs(60);

/// A started process.
#[derive(Debug)]
pub struct Process {
    child: Child,
    lines: Receiver<String>,
    /// Every line read so far (stdout, and stderr where collected).
    pub seen: Vec<String>,
    /// The process's stdin, when it is piped.
    pub stdin: Option<ChildStdin>,
}

/// How to start a process.
#[derive(Debug, Default)]
pub struct Start {
    /// The process's stdin, a pty for example. `None` gives a pipe, available as
    /// [`Process::stdin`].
    pub stdin: Option<Stdio>,
    /// Whether the process's stderr (a panic message, for example) goes among the collected lines
    /// rather than to the test's stderr.
    pub with_stderr: bool,
}

impl Process {
    /// Starts `cmd` and reads its stdout (and its stderr, if asked) line by line.
    pub fn start(cmd: &mut Command, how: Start) -> Process {
        let piped = how.stdin.is_none();
        let mut child = cmd
            .stdin(how.stdin.unwrap_or_else(Stdio::piped))
            .stdout(Stdio::piped())
            .stderr(if how.with_stderr { Stdio::piped() } else { Stdio::inherit() })
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stdin = if piped { child.stdin.take() } else { None };
        let (tx, lines) = mpsc::channel();
        let forward = |stream: Box<dyn Read + Send>, tx: mpsc::Sender<String>| {
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
        forward(Box::new(child.stdout.take().expect("piped stdout")), tx);
        Process { child, lines, seen: Vec::new(), stdin }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads lines until `found` returns true for the lines seen. After the `GENEROUS` timeout, it
    /// panics, saying that `what` was missing and showing the output.
    fn read_until(&mut self, what: &str, mut found: impl FnMut(&[String]) -> bool) {
        let deadline = Instant::now() + GENEROUS;
        while !found(&self.seen) {
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("process {}: {what}; output:\n{}", self.pid(), self.seen.join("\n")),
            }
        }
    }

    /// Waits for a line containing `text`.
    pub fn expect(&mut self, text: &str) {
        self.read_until(&format!("no line with '{text}'"), |seen| seen.iter().any(|l| l.contains(text)));
    }

    /// Waits until `text` appeared in at least `n` lines.
    pub fn expect_count(&mut self, text: &str, n: usize) {
        self.read_until(&format!("fewer than {n} lines with '{text}'"), |seen| {
            seen.iter().filter(|l| l.contains(text)).count() >= n
        });
    }

    /// Waits for the next line that starts with `prefix`, past the lines already seen, and
    /// returns that line. Lines after it stay unread.
    pub fn expect_line(&mut self, prefix: &str) -> String {
        let from = self.seen.len();
        self.read_until(&format!("never printed '{prefix}'"), |seen| {
            seen[from..].iter().any(|l| l.starts_with(prefix))
        });
        // `read_until` reads one line at a time and stops at the first match, so the match is
        // the last line read.
        self.seen.last().expect("a line was read").clone()
    }

    /// Whether the process has ended (without waiting).
    pub fn has_ended(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_some()
    }

    /// Collects the lines printed so far, without waiting.
    pub fn drain(&mut self) {
        while let Ok(l) = self.lines.try_recv() {
            self.seen.push(l);
        }
    }

    /// The number of seen lines that contain `text`.
    pub fn count(&self, text: &str) -> usize {
        self.seen.iter().filter(|l| l.contains(text)).count()
    }

    /// Whether a line seen contains `text`.
    pub fn saw(&self, text: &str) -> bool {
        self.seen.iter().any(|l| l.contains(text))
    }

    /// Sends signal `sig` (`libc::SIGSTOP`, `nix::sys::signal::Signal::SIGINT as i32`, ...).
    pub fn signal(&self, sig: i32) {
        crate::sys::process::signal(self.pid(), sig).unwrap_or_else(|e| panic!("signal {sig} to {}: {e}", self.pid()));
    }

    /// Writes `keys` to the process's stdin.
    pub fn send_keys(&mut self, keys: &str) {
        let s = self.stdin.as_mut().expect("piped stdin");
        s.write_all(keys.as_bytes()).expect("write to stdin");
        s.flush().expect("flush stdin");
    }

    /// Kills the process (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        self.wait();
    }

    /// Waits for the process to end, up to the `GENEROUS` timeout, and collects the rest of its
    /// output.
    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + GENEROUS;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                break s;
            }
            self.drain();
            assert!(Instant::now() < deadline, "process {} did not end; output:\n{}", self.pid(), self.seen.join("\n"));
            std::thread::sleep(Duration::from_millis(10));
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(300)) {
            self.seen.push(l);
        }
        status
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` to its end and returns its exit status and everything it printed, stdout and stderr
/// together. After the `GENEROUS` timeout, the call fails and the process is killed.
pub fn run(cmd: &mut Command) -> (ExitStatus, String) {
    let mut p = Process::start(cmd, Start { stdin: Some(Stdio::null()), with_stderr: true });
    let status = p.wait();
    (status, p.seen.join("\n"))
}

/// Polls `done` until it returns true. After the `GENEROUS` timeout, it fails with a message
/// naming `what`.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + GENEROUS;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
