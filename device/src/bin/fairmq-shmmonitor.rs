//! `fairmq-shmmonitor`: views, watches and cleans shared-memory sessions, with FairMQ's options
//! and modes (view, interactive, monitor, cleanup, list-all, get-shmid, debug, reset-content).
//!
//! The work is done by `fairmq_shm::monitor`; this program parses the command line, picks the
//! mode, logs as FairMQ's monitor does and daemonizes. It lives in the `fairmq` crate to share
//! the device's FairLogger-style logging and option parsing.
use fairmq::logging::{self, Severity, Verbosity};
use fairmq::options::{Kind, OptionGroup, Options};
use fairmq::terminal;
use fairmq::Properties;
use fairmq_shm::monitor::{self, MonitorLock, Step, Watcher, WATCH_INTERVAL};
use fairmq_shm::Names;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Environment variable set in the re-executed daemon, so that the daemon does not daemonize
/// again.
const DAEMON_ENV: &str = "FAIRMQ_SHMMONITOR_DAEMON";
const CONTROLS: &str = "controls: [x] close memory, [b] print a list of allocated messages, [h] help, [q] quit.";

fn options() -> Options {
    let mut g = OptionGroup::new("FairMQ Shared Memory Monitor");
    g.add_with_short("session", 's', Kind::Str, "default", "Session id")
        .add("shmid", Kind::Str, "", "Shmem Id (8 hex digits, as --get-shmid prints; overrides --session)")
        .add_flag_with_short("cleanup", 'c', "Perform cleanup and quit")
        .add_flag_with_short("reset-content", 'r', "[EXPERIMENTAL] Reset content of managed segments, then quit")
        .add_flag_with_short("self-destruct", 'x', "Quit after first closing of the memory")
        .add_flag_with_short("interactive", 'i', "Interactive run")
        .add_flag_with_short("view", 'v', "Run in view only mode")
        .add_with_short("timeout", 't', Kind::U64, 5000u64, "Heartbeat timeout in milliseconds")
        .add_flag_with_short("daemonize", 'd', "Daemonize the monitor")
        .add_flag_with_short("monitor", 'm', "Run in monitoring mode")
        .add_flag_with_short("debug", 'b', "Print a list of allocated messages and quit")
        .add_flag_with_short("clean-on-exit", 'e', "Perform cleanup on exit")
        .add("interval", Kind::U64, 1000u64, "Output interval for interactive mode")
        // An interval of 0 would redraw the report without pause and keep a full core busy.
        .within(10u64..=86_400_000)
        .add_optional("get-shmid", Kind::Flag, "Translate given session id and user id to a shmem id")
        .add_optional("list-all", Kind::Flag, "List all sessions found in --list-all-path")
        .add("list-all-path", Kind::Str, "/dev/shm/", "Directory --list-all (and --metrics-address) looks in")
        .add("prometheus-targets", Kind::Str, "", "Write the metrics endpoints of the session's devices (those run with --metrics-address) to this file as Prometheus file_sd JSON (labels pid, session, shmid), then quit (fairmq-rs)")
        .add("metrics-address", Kind::Str, "", "Serve Prometheus metrics of every session in --list-all-path at http://HOST:PORT/metrics (port 0: a free port, logged); with it, view mode serves until SIGINT or SIGTERM (fairmq-rs)")
        .add_optional("verbose", Kind::Flag, "Verbose mode (daemon will output to a file)")
        .add("severity", Kind::Str, "info", "Log severity")
        .add("user-id", Kind::Int, -1i64, "User id (used with --get-shmid)")
        .add_flag_with_short("help", 'h', "Print help");
    let mut o = Options::default();
    o.add_group(g);
    o
}

fn flag(p: &Properties, name: &str) -> bool {
    p.get_or(name, false).unwrap_or(false)
}

fn main() -> ExitCode {
    logging::init();
    logging::set_verbosity(Verbosity::Verylow);
    logging::set_color(false);
    let args = match fairmq::process_args() {
        Ok(a) => a,
        Err(code) => return code,
    };
    let mut opts = options();
    let p = Properties::new();
    if let Err(e) = opts.parse(&args, &p) {
        return fail(&e.to_string());
    }
    if let Some(stray) = opts.unregistered.first() {
        return fail(&format!("unrecognised option '{stray}'"));
    }
    match p.get::<String>("severity").map(|s| s.parse::<Severity>()) {
        Ok(Ok(s)) => logging::set_console_severity(s),
        Ok(Err(e)) => return fail(&e.to_string()),
        Err(e) => return fail(&e.to_string()),
    }
    match run(&opts, &p) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(what: &str) -> ExitCode {
    log::error!("Unhandled Exception reached the top of main: {what}, application will now exit");
    ExitCode::from(2)
}

fn run(opts: &Options, p: &Properties) -> Result<(), String> {
    if flag(p, "help") {
        print!("{}", opts.help());
        return Ok(());
    }
    let session: String = p.get("session").map_err(|e| e.to_string())?;
    if flag(p, "get-shmid") {
        let uid: i64 = p.get("user-id").map_err(|e| e.to_string())?;
        if uid < 0 {
            let euid = nix::unistd::geteuid().as_raw();
            let id = fairmq_shm::shm_id_for(euid, &session);
            log::info!("shmem id for session '{session}' and current user id {euid} is: {id}");
        } else {
            let uid = u32::try_from(uid).map_err(|_| format!("user id {uid} is out of range"))?;
            let id = fairmq_shm::shm_id_for(uid, &session);
            log::info!("shmem id for session '{session}' and user id {uid} is: {id}");
        }
        return Ok(());
    }
    let given: String = p.get("shmid").map_err(|e| e.to_string())?;
    let shm_id = if given.is_empty() { fairmq_shm::shm_id(&session) } else { checked_shm_id(&given)? };
    if flag(p, "cleanup") {
        monitor::cleanup_full(&shm_id).map_err(|e| e.to_string())?;
        return Ok(());
    }
    if flag(p, "reset-content") {
        return monitor::reset_content(&shm_id, &mut |line| println!("{line}")).map_err(|e| e.to_string());
    }
    if flag(p, "debug") {
        log::info!("{}", monitor::debug_info(&shm_id).map_err(|e| e.to_string())?.trim_end());
        return Ok(());
    }
    let targets: String = p.get("prometheus-targets").map_err(|e| e.to_string())?;
    if !targets.is_empty() {
        return write_targets(&shm_id, std::path::Path::new(&targets));
    }
    if flag(p, "list-all") {
        let path: String = p.get("list-all-path").map_err(|e| e.to_string())?;
        log::info!("{}", monitor::list_all(std::path::Path::new(&path)).map_err(|e| e.to_string())?.trim_end());
        return Ok(());
    }
    let (interactive, mon) = (flag(p, "interactive"), flag(p, "monitor"));
    let view = flag(p, "view") || !(interactive || mon);
    let metrics: String = p.get("metrics-address").map_err(|e| e.to_string())?;
    if view && !interactive && !metrics.is_empty() {
        log_report(&shm_id).map_err(|e| e.to_string())?;
        let _endpoint = start_metrics(p, &metrics)?;
        let signal = signals()?;
        while signal.load(Ordering::Relaxed) == 0 {
            std::thread::sleep(Duration::from_millis(100));
        }
        log::info!("signal: {}", signal.load(Ordering::Relaxed));
        return Ok(());
    }
    if view && !interactive {
        if !log_report(&shm_id).map_err(|e| e.to_string())? {
            if let Some(hex) = decimal_form(&given) {
                // Devices read --shmid as a decimal number. This monitor, like FairMQ's, reads it
                // as hex.
                log::warn!(
                    "--shmid '{given}' is read as hex (as --get-shmid prints it); a device's --shmid {given} (decimal) is shm id {hex} here: fairmq-shmmonitor --shmid {hex}"
                );
            }
        }
        return Ok(());
    }
    if flag(p, "daemonize") && mon && !daemonize(flag(p, "verbose"))? {
        return Ok(());
    }
    log::info!("Starting shared memory monitor for session: \"{session}\" (shm id: {shm_id})...");
    let names = Names::new(&shm_id);
    let lock = if view {
        None
    } else {
        match MonitorLock::acquire(&names).map_err(|e| e.to_string())? {
            Some(l) => Some(l),
            None => {
                let hint = if interactive { ", or run in view-only mode (-v)" } else { "" };
                log::error!(
                    "fairmq-shmmonitor for shm id {shm_id} is already running. Try `fairmq-shmmonitor --cleanup --shmid {shm_id}`{hint}"
                );
                return Ok(());
            }
        }
    };
    // The metrics endpoint starts only after daemonizing, because the launcher exits at once.
    let _endpoint = if metrics.is_empty() { None } else { Some(start_metrics(p, &metrics)?) };
    let signal = signals()?;
    let terminating = || signal.load(Ordering::Relaxed) != 0;
    if interactive {
        let interval = Duration::from_millis(p.get("interval").map_err(|e| e.to_string())?);
        interact(&shm_id, view, interval, terminating);
    } else {
        let timeout = Duration::from_millis(p.get("timeout").map_err(|e| e.to_string())?);
        let mut w = Watcher::new(&shm_id, timeout, flag(p, "self-destruct"));
        while !terminating() && w.step().map_err(|e| e.to_string())? == Step::Continue {
            std::thread::sleep(WATCH_INTERVAL);
        }
    }
    match signal.load(Ordering::Relaxed) {
        0 => {}
        n => log::info!("signal: {n}"),
    }
    if flag(p, "clean-on-exit") {
        monitor::cleanup(&shm_id).map_err(|e| e.to_string())?;
    }
    drop(lock);
    Ok(())
}

/// Registers handlers for SIGINT and SIGTERM. The returned value holds the number of the signal
/// that asked the program to stop, or 0 while no such signal has come.
fn signals() -> Result<Arc<AtomicUsize>, String> {
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_usize(sig, signal.clone(), sig as usize).map_err(|e| e.to_string())?;
    }
    Ok(signal)
}

/// Writes to `file` the Prometheus file_sd targets of the devices in session `shm_id` that serve
/// metrics.
fn write_targets(shm_id: &str, file: &std::path::Path) -> Result<(), String> {
    use fairmq::metrics::targets;
    let view = monitor::session_view(shm_id).map_err(|e| e.to_string())?;
    let groups = view.iter().flat_map(|v| {
        v.endpoints.iter().map(|&(pid, endpoint)| {
            let labels = vec![("pid", pid.to_string()), ("session", v.session.clone()), ("shmid", v.shm_id.clone())];
            (targets::reachable(endpoint).to_string(), labels)
        })
    });
    let json = targets::file_sd(groups.collect::<Vec<_>>());
    targets::write(file, &json).map_err(|e| format!("writing {}: {e}", file.display()))?;
    let n = view.as_ref().map_or(0, |v| v.endpoints.len());
    log::info!("{n} metrics endpoints of shm id {shm_id} written to {}", file.display());
    Ok(())
}

/// Starts a metrics endpoint at `address` that serves every session in `--list-all-path`.
fn start_metrics(p: &Properties, address: &str) -> Result<fairmq::metrics::Endpoint, String> {
    let dir: String = p.get("list-all-path").map_err(|e| e.to_string())?;
    fairmq::metrics::start_for_sessions(address, std::path::Path::new(&dir)).map_err(|e| e.to_string())
}

/// Logs the segment report of session `shm_id`, as FairMQ's `PrintShm` does, or logs that the
/// session has no segments. Returns whether the session has segments.
fn log_report(shm_id: &str) -> Result<bool, fairmq_shm::ShmError> {
    match monitor::report(shm_id)? {
        Some(r) => {
            log::info!("{}", r.trim_end());
            Ok(true)
        }
        None => {
            log::info!("No segments found.");
            Ok(false)
        }
    }
}

/// Converts a device's decimal `--shmid` into the hex shm id that this monitor uses. Returns
/// `None` if `given` is not a decimal number.
fn decimal_form(given: &str) -> Option<String> {
    if given.is_empty() || !given.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    given.parse::<u64>().ok().map(fairmq_shm::shm_id_from_number)
}

/// Checks a shm id given on the command line and returns it in lower case. The shm id becomes
/// part of file names, so only hex digits (at most 16) are accepted.
fn checked_shm_id(given: &str) -> Result<String, String> {
    if given.len() <= 16 && given.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(given.to_ascii_lowercase())
    } else {
        Err(format!("invalid --shmid '{given}': expected up to 16 hex digits (as --get-shmid prints)"))
    }
}

/// Detaches the monitor from the terminal.
///
/// The program starts itself again as a daemon, with stdin, stdout and stderr on /dev/null. The
/// daemon moves to a new session. `daemonize` returns false in the launcher, which then exits, and
/// true in the daemon. Re-executing instead of forking keeps this program free of unsafe code. It
/// also avoids forking a process that has several threads.
fn daemonize(verbose: bool) -> Result<bool, String> {
    if std::env::var_os(DAEMON_ENV).is_some() {
        let _ = nix::unistd::setsid();
        // The daemon keeps the caller's umask, although FairMQ clears it. The files that the daemon
        // creates are private anyway. A cleared umask would make every file created without an
        // explicit mode writable by every user.
        if verbose {
            let stamp =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
            logging::log_to_file(&format!("fairmq-shmmonitor_{stamp}")).map_err(|e| e.to_string())?;
            logging::set_file_severity(Severity::Trace);
        }
        std::env::set_current_dir("/").map_err(|e| format!("chdir to /: {e}"))?;
        return Ok(true);
    }
    if nix::unistd::getppid().as_raw() == 1 {
        return Ok(true);
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(DAEMON_ENV, "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start the daemon: {e}"))?;
    Ok(false)
}

/// Runs the interactive mode. The user presses single keys. The session report is logged again
/// after every key and after every `interval` without a key.
fn interact(shm_id: &str, view: bool, interval: Duration, terminating: impl Fn() -> bool) {
    let _raw = terminal::RawMode::enable();
    log::info!("{CONTROLS}");
    let report = || {
        if let Err(e) = log_report(shm_id) {
            log::error!("{e}");
        }
    };
    report();
    while !terminating() {
        if terminal::stdin_ready(interval) {
            let mut b = [0u8; 1];
            match terminal::read_byte(&mut b) {
                Ok(1) => {}
                _ => {
                    log::info!("[EOF] --> quitting.");
                    return;
                }
            }
            match b[0] {
                b'q' => {
                    log::info!("[q] --> quitting.");
                    return;
                }
                b'x' if view => log::info!("[x] --> cannot close because in view only mode"),
                b'x' => {
                    log::info!("[x] --> closing shared memory:");
                    if let Err(e) = monitor::cleanup(shm_id) {
                        log::error!("{e}");
                    }
                }
                b'h' => log::info!("[h] --> help:\n{CONTROLS}"),
                b'b' => match monitor::debug_info(shm_id) {
                    Ok(info) => log::info!("[b] --> allocated messages:\n{}", info.trim_end()),
                    Err(e) => log::error!("[b] --> {e}"),
                },
                b'\n' => log::info!("[\\n] --> invalid input."),
                c => log::info!("[{}] --> invalid input.", c as char),
            }
        }
        if !terminating() {
            report();
        }
    }
}
