//! FairLogger-like console and file logging on top of the `log` facade.
//!
//! [`init`] installs the logger; a device program does so at start. A library user may install
//! another `log` backend instead. Lines look like FairMQ's, for example
//! `[HH:MM:SS][STATE] IDLE ---> INITIALIZING DEVICE` at [`Verbosity`] `medium`. A line goes to the
//! console or, with `--log-to-file`, to the file instead.
//!
//! # Severities
//!
//! FairMQ's severities ([`Severity`]) are `trace debug info state warn error fatal nolog`. The
//! `log` facade has no level for two of them. A `state` line (between info and warn) is logged at
//! info level with the target [`STATE_TARGET`]. A `fatal` line is logged at error level with the
//! target [`FATAL_TARGET`].
//!
//! # Repeated lines
//!
//! The framework may repeat a line more than a few times a second: a peer sends bad frames, or a
//! socket fails on every call. Such a line is summarised. After a burst, one line per second says
//! how many more lines of that kind came (see `log_limiter`). The program's own lines (a
//! device's, or a C or C++ caller's) all appear, as in FairMQ. [`SummaryPolicy`] changes that:
//! `--log-summary all` summarises the program's lines too, and `none` summarises nothing. State
//! lines are never summarised: controllers and scripts read them, and the state machine cannot
//! repeat them in a loop.

use crate::log_limiter::{LineKey, RepeatLimiter, Summary, Verdict};
use parking_lot::{Mutex, RwLock};
use std::fs::File;
use std::io::Write;
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The `log` target of lines at FairMQ's `state` severity.
pub const STATE_TARGET: &str = "fairmq::state";
/// The `log` target of lines at FairMQ's `fatal` severity.
pub const FATAL_TARGET: &str = "fairmq::fatal";

/// Logs at FairMQ's `state` severity.
macro_rules! state {
    ($($arg:tt)*) => { log::info!(target: $crate::logging::STATE_TARGET, $($arg)*) };
}
pub(crate) use state;

/// FairMQ's severities, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The finest detail. It stands for FairLogger's `trace` and `debug1` to `debug4`.
    Trace,
    /// Detail for developers. It stands for `debug` and for FairLogger's `detail`.
    Debug,
    /// Normal operation.
    Info,
    /// State changes of the device (`IDLE ---> INITIALIZING DEVICE`).
    State,
    /// Something unexpected that the device survives. It also stands for FairLogger's
    /// `important` and `alarm`.
    Warn,
    /// A failure.
    Error,
    /// A failure that ends the device.
    Fatal,
    /// Nothing is logged.
    Nolog,
}

impl Severity {
    /// Every severity, lowest first. The `k` and `l` keys cycle through them in this order.
    pub const ALL: [Severity; 8] = [
        Severity::Trace,
        Severity::Debug,
        Severity::Info,
        Severity::State,
        Severity::Warn,
        Severity::Error,
        Severity::Fatal,
        Severity::Nolog,
    ];

    /// The name that is printed, and that `--severity` takes.
    pub fn name(self) -> &'static str {
        ["trace", "debug", "info", "state", "warn", "error", "fatal", "nolog"][self as usize]
    }

    fn label(self) -> &'static str {
        ["TRACE", "DEBUG", "INFO", "STATE", "WARN", "ERROR", "FATAL", "NOLOG"][self as usize]
    }

    fn color(self) -> &'static str {
        ["\x1b[0;36m", "\x1b[0;34m", "\x1b[0;32m", "\x1b[0;35m", "\x1b[0;33m", "\x1b[0;31m", "\x1b[1;31m", ""]
            [self as usize]
    }

    fn of(record: &log::Metadata<'_>) -> Severity {
        match record.level() {
            log::Level::Trace => Severity::Trace,
            log::Level::Debug => Severity::Debug,
            log::Level::Info if record.target() == STATE_TARGET => Severity::State,
            log::Level::Info => Severity::Info,
            log::Level::Warn => Severity::Warn,
            log::Level::Error if record.target() == FATAL_TARGET => Severity::Fatal,
            log::Level::Error => Severity::Error,
        }
    }
}

/// A name that is not a known severity, verbosity or log-summary policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} '{name}'; known: {known}")]
pub struct UnknownLogSetting {
    /// The setting: `"severity"`, `"verbosity"` or `"log summary"`.
    pub kind: &'static str,
    /// The name given.
    pub name: String,
    /// The accepted names.
    pub known: &'static str,
}

impl FromStr for Severity {
    type Err = UnknownLogSetting;
    fn from_str(s: &str) -> Result<Severity, UnknownLogSetting> {
        let s = if s == "warning" { "warn" } else { s };
        Severity::ALL.into_iter().find(|v| v.name() == s).ok_or(UnknownLogSetting {
            kind: "severity",
            name: s.to_owned(),
            known: "trace, debug, info, state, warn, error, fatal, nolog",
        })
    }
}

/// How much context each line carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// The message only.
    Verylow,
    /// Severity and message.
    Low,
    /// Time, severity and message (the default).
    Medium,
    /// Date and time to the microsecond, severity and message.
    High,
    /// As `High`, plus the file, line and function (or module) that logged the line.
    Veryhigh,
}

impl Verbosity {
    /// Every verbosity, lowest first.
    pub const ALL: [Verbosity; 5] =
        [Verbosity::Verylow, Verbosity::Low, Verbosity::Medium, Verbosity::High, Verbosity::Veryhigh];

    /// The name given to `--verbosity`.
    pub fn name(self) -> &'static str {
        ["verylow", "low", "medium", "high", "veryhigh"][self as usize]
    }
}

impl FromStr for Verbosity {
    type Err = UnknownLogSetting;
    fn from_str(s: &str) -> Result<Verbosity, UnknownLogSetting> {
        Verbosity::ALL.into_iter().find(|v| v.name() == s).ok_or(UnknownLogSetting {
            kind: "verbosity",
            name: s.to_owned(),
            known: "verylow, low, medium, high, veryhigh",
        })
    }
}

struct Settings {
    console: Severity,
    file_severity: Severity,
    verbosity: Verbosity,
    color: bool,
    file: Option<File>,
    summary: SummaryPolicy,
}

/// Which repeated lines are summarised (`--log-summary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryPolicy {
    /// Only the framework's own lines are summarised (the default).
    Library,
    /// Every line except state lines is summarised.
    All,
    /// No line is summarised.
    None,
}

impl FromStr for SummaryPolicy {
    type Err = UnknownLogSetting;
    fn from_str(s: &str) -> Result<SummaryPolicy, UnknownLogSetting> {
        match s {
            "library" => Ok(SummaryPolicy::Library),
            "all" => Ok(SummaryPolicy::All),
            "none" => Ok(SummaryPolicy::None),
            _ => Err(UnknownLogSetting { kind: "log summary", name: s.to_owned(), known: "library, all, none" }),
        }
    }
}

impl SummaryPolicy {
    /// Whether lines of `target` may be summarised. The target is a module path, or the function
    /// of a C caller.
    fn covers(self, target: &str) -> bool {
        match self {
            SummaryPolicy::All => true,
            SummaryPolicy::None => false,
            // The names of the framework's crates start with `fairmq`: fairmq, fairmq_shm,
            // fairmq_zmq and fairmq_rs (the C ABI).
            SummaryPolicy::Library => target.starts_with("fairmq"),
        }
    }
}

/// Sets which repeated lines are summarised.
pub fn set_summary_policy(p: SummaryPolicy) {
    SETTINGS.write().summary = p;
}

static SETTINGS: RwLock<Settings> = RwLock::new(Settings {
    console: Severity::Info,
    file_severity: Severity::Debug,
    verbosity: Verbosity::Medium,
    color: false,
    file: None,
    summary: SummaryPolicy::Library,
});

static LIMITER: Mutex<RepeatLimiter> = Mutex::new(RepeatLimiter::new());
/// The number of error and fatal records that this process logged, whether they were written or
/// not. The metrics report it as the error count.
static ERRORS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many error and fatal records this process logged so far.
pub(crate) fn errors_logged() -> u64 {
    ERRORS.load(std::sync::atomic::Ordering::Relaxed)
}

struct Logger;

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        let s = SETTINGS.read();
        let sev = Severity::of(m);
        sev >= s.console || (s.file.is_some() && sev >= s.file_severity)
    }

    fn log(&self, record: &log::Record<'_>) {
        if record.level() == log::Level::Error {
            ERRORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let sev = Severity::of(record.metadata());
        let policy = {
            let s = SETTINGS.read();
            if !s.writes(sev) {
                return;
            }
            s.summary
        };
        // Format the text once, before taking any lock. An argument's `Display` may log a line
        // itself, which would deadlock under the logger's locks.
        let text = record.args().to_string();
        let site = match (record.file(), record.line()) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            _ => text.clone(),
        };
        let key = LineKey { level: record.level(), target: record.target().to_owned(), site };
        let limited = sev != Severity::State && policy.covers(&key.target);
        let now = Instant::now();
        let (summaries, verdict) = {
            let mut limiter = LIMITER.lock();
            let summaries = limiter.due(now);
            let verdict = if limited { limiter.admit(&key, &text, now) } else { Verdict::Pass };
            (summaries, verdict)
        };
        let s = SETTINGS.read();
        for summary in &summaries {
            write_summary(&s, summary);
        }
        match verdict {
            Verdict::Pass => {
                let line = Line { sev, text: &text, target: &key.target, file: record.file(), line: record.line() };
                write(&s, &line);
            }
            // The summary of this line is due within a second, even if nothing else is logged.
            // The summary writer may be asleep until it is woken, so wake it. Later lines of the
            // same window find the writer awake or on a timer.
            Verdict::HoldFirst => summary_writer().unpark(),
            Verdict::Hold => {}
        }
    }

    fn flush(&self) {
        let summaries = LIMITER.lock().drain(Instant::now());
        let s = SETTINGS.read();
        for summary in &summaries {
            write_summary(&s, summary);
        }
        let _ = std::io::stdout().flush();
    }
}

impl Settings {
    fn to_console(&self, sev: Severity) -> bool {
        sev >= self.console && self.console != Severity::Nolog && self.file.is_none()
    }

    fn to_file(&self, sev: Severity) -> bool {
        self.file.is_some() && sev >= self.file_severity
    }

    fn writes(&self, sev: Severity) -> bool {
        self.to_console(sev) || self.to_file(sev)
    }
}

/// A line to write: its severity, text and origin.
struct Line<'a> {
    sev: Severity,
    text: &'a str,
    target: &'a str,
    file: Option<&'a str>,
    line: Option<u32>,
}

/// Writes `l` where the settings send it. A line goes to the console or to the file, never to
/// both.
fn write(s: &Settings, l: &Line<'_>) {
    let (to_console, to_file) = (s.to_console(l.sev), s.to_file(l.sev));
    if !to_console && !to_file {
        return;
    }
    let text = format_line(l, s.verbosity, to_console && s.color);
    if to_console {
        crate::console::line(&text);
    } else if let Some(mut f) = s.file.as_ref() {
        let _ = writeln!(f, "{text}");
    }
}

/// Returns the thread that writes the summaries when their second is over. Lines logged in the
/// meantime write due summaries too. The first line held back starts the thread. The thread
/// sleeps until the next window ends or, when no line is tracked, until it is woken.
fn summary_writer() -> &'static std::thread::Thread {
    static WRITER: OnceLock<std::thread::Thread> = OnceLock::new();
    WRITER.get_or_init(|| {
        let spawned = std::thread::Builder::new().name("fmq-log-summary".into()).spawn(|| loop {
            let now = Instant::now();
            let (summaries, next) = {
                let mut limiter = LIMITER.lock();
                (limiter.due(now), limiter.next_due())
            };
            let s = SETTINGS.read();
            summaries.iter().for_each(|summary| write_summary(&s, summary));
            drop(s);
            match next {
                Some(t) => std::thread::park_timeout(t.saturating_duration_since(Instant::now())),
                None => std::thread::park(),
            }
        });
        // If the thread cannot start, the summaries are still written with the next line logged
        // and at exit.
        spawned.map_or_else(|_| std::thread::current(), |h| h.thread().clone())
    })
}

/// Writes a summary as a line with the severity and target of the lines it summarises.
fn write_summary(s: &Settings, summary: &Summary) {
    let text = summary.text();
    let k = &summary.key;
    let sev = Severity::of(&log::Metadata::builder().level(k.level).target(&k.target).build());
    write(s, &Line { sev, text: &text, target: &k.target, file: None, line: None });
}

/// Writes the summaries of lines still held back. Call it before the process ends.
pub fn flush() {
    log::logger().flush();
}

fn clock(with_date: bool, micros: bool) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs();
    let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    let mut out = String::new();
    if with_date {
        let (y, mo, d) = civil_from_days((secs / 86400) as i64);
        out.push_str(&format!("{y:04}-{mo:02}-{d:02} "));
    }
    out.push_str(&format!("{h:02}:{m:02}:{s:02}"));
    if micros {
        out.push_str(&format!(".{:06}", now.subsec_micros()));
    }
    out
}

/// Converts a number of days since 1970-01-01 to (year, month, day), with Howard Hinnant's
/// algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn format_line(l: &Line<'_>, v: Verbosity, color: bool) -> String {
    let sev = l.sev;
    let label = if color { format!("{}{}\x1b[0m", sev.color(), sev.label()) } else { sev.label().to_owned() };
    let text = l.text;
    match v {
        Verbosity::Verylow => text.to_owned(),
        Verbosity::Low => format!("[{label}] {text}"),
        Verbosity::Medium => format!("[{}][{label}] {text}", clock(false, false)),
        Verbosity::High => format!("[{}][{label}] {text}", clock(true, true)),
        Verbosity::Veryhigh => format!(
            "[{}][{label}][{}:{}:{}] {text}",
            clock(true, true),
            l.file.unwrap_or("?"),
            l.line.unwrap_or(0),
            l.target,
        ),
    }
}

/// Installs the logger, once per process. Later calls install nothing; the settings change
/// through the `set_*` functions. Returns false if another `log` backend was installed first.
pub fn init() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        let ok = log::set_logger(&Logger).is_ok();
        if ok {
            log::set_max_level(log::LevelFilter::Trace);
        }
        ok
    })
}

/// Sets the console severity (`--severity`).
pub fn set_console_severity(s: Severity) {
    SETTINGS.write().console = s;
}

/// The console severity.
pub fn console_severity() -> Severity {
    SETTINGS.read().console
}

/// Sets the file severity (`--file-severity`).
pub fn set_file_severity(s: Severity) {
    SETTINGS.write().file_severity = s;
}

/// Sets the verbosity (`--verbosity`).
pub fn set_verbosity(v: Verbosity) {
    SETTINGS.write().verbosity = v;
}

/// The verbosity.
pub fn verbosity() -> Verbosity {
    SETTINGS.read().verbosity
}

/// Turns colors on the console on or off (`--color`).
pub fn set_color(on: bool) {
    SETTINGS.write().color = on;
}

/// Writes the log to the file `<prefix>_<pid>.log` instead of the console (`--log-to-file`).
/// The file must not exist yet: `log_to_file` creates it, readable by its user only. It never
/// opens the file through a symbolic link. The file name is predictable, so in a shared
/// directory another user could plant that name first. The device would then write into the
/// other user's file, or truncate one of the device user's files.
pub fn log_to_file(prefix: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = format!("{prefix}_{}.log", std::process::id());
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{path}: {e} (the log file must not exist yet)")))?;
    SETTINGS.write().file = Some(f);
    Ok(())
}

/// Cycles the console severity up (`k` key) or down (`l` key), as the interactive controller does.
pub fn cycle_severity(up: bool) -> Severity {
    let mut s = SETTINGS.write();
    let i = s.console as usize;
    let n = Severity::ALL.len();
    s.console = Severity::ALL[if up { (i + 1) % n } else { (i + n - 1) % n }];
    s.console
}

/// Cycles the verbosity up (`n` key) or down (`m` key).
pub fn cycle_verbosity(up: bool) -> Verbosity {
    let mut s = SETTINGS.write();
    let i = s.verbosity as usize;
    let n = Verbosity::ALL.len();
    s.verbosity = Verbosity::ALL[if up { (i + 1) % n } else { (i + n - 1) % n }];
    s.verbosity
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_order() {
        assert!(Severity::State > Severity::Info && Severity::State < Severity::Warn);
        assert_eq!("warning".parse::<Severity>().unwrap(), Severity::Warn);
        assert!("loud".parse::<Severity>().is_err());
        assert_eq!("veryhigh".parse::<Verbosity>().unwrap(), Verbosity::Veryhigh);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_789), (2026, 12, 2));
    }

    #[test]
    fn line_format_of_each_verbosity() {
        let sev = Severity::of(&log::Metadata::builder().target(STATE_TARGET).level(log::Level::Info).build());
        assert_eq!(sev, Severity::State);
        let text = "IDLE ---> INITIALIZING DEVICE";
        let l = Line { sev, text, target: STATE_TARGET, file: Some("device.rs"), line: Some(7) };
        assert_eq!(format_line(&l, Verbosity::Verylow, false), "IDLE ---> INITIALIZING DEVICE");
        assert_eq!(format_line(&l, Verbosity::Low, false), "[STATE] IDLE ---> INITIALIZING DEVICE");
        let medium = format_line(&l, Verbosity::Medium, false);
        assert!(
            medium.len() == "[12:34:56][STATE] IDLE ---> INITIALIZING DEVICE".len() && medium.starts_with('['),
            "{medium}"
        );
        assert!(format_line(&l, Verbosity::Medium, true).contains("\x1b[0;35mSTATE\x1b[0m"));
        let very = format_line(&l, Verbosity::Veryhigh, false);
        assert!(very.ends_with("[STATE][device.rs:7:fairmq::state] IDLE ---> INITIALIZING DEVICE"), "{very}");
    }

    #[test]
    fn only_the_frameworks_lines_are_summarised_unless_all_are_asked_for() {
        for framework in ["fairmq::device", "fairmq_shm::transport::socket", "fairmq_zmq", "fairmq_rs"] {
            assert!(SummaryPolicy::Library.covers(framework), "{framework}");
            assert!(!SummaryPolicy::None.covers(framework), "{framework}");
        }
        for program in ["HandleData", "c", "my_device::sink"] {
            assert!(!SummaryPolicy::Library.covers(program), "{program}");
            assert!(SummaryPolicy::All.covers(program), "{program}");
        }
        assert_eq!("all".parse::<SummaryPolicy>().unwrap(), SummaryPolicy::All);
        assert!("some".parse::<SummaryPolicy>().is_err());
    }

    /// A value whose `Display` logs a line. The logger formats the value before it takes its
    /// locks. The logger deadlocked when it made the line's text under the limiter's lock.
    #[test]
    fn a_line_whose_argument_logs_itself_is_written() {
        struct Chatty;
        impl std::fmt::Display for Chatty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                log::warn!("formatting a chatty value");
                f.write_str("chatty")
            }
        }
        init();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            log::error!("{}", Chatty);
            let _ = tx.send(());
        });
        assert!(rx.recv_timeout(std::time::Duration::from_secs(30)).is_ok(), "the logger deadlocked");
    }
}
