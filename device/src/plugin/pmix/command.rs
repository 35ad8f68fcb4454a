//! `fairmq-pmix-command`: drives the devices of a PMIx job. Three ways to run it:
//!
//! - as a process of the job, with its commands: `mpirun <devices> : -n 1 fairmq-pmix-command run
//!   stop state` runs them in order (see `controller.rs`) and exits;
//! - as a process of the job that serves operators: `... : -n 1 fairmq-pmix-command serve` (it
//!   exits once every device is EXITING);
//! - as an operator, outside the job, on the host of the serving process: `fairmq-pmix-command
//!   --namespace NS stop` sends its commands to the job whose PMIx namespace is NS (see
//!   `operator.rs`: the launchers here accept no PMIx tool connections, so the job carries the
//!   controller and the operator reaches it through a socket only its user can open).

use super::steps::{self, Step};
use super::{controller::Controller, ffi, operator};
use crate::BoxError;
use std::time::Duration;

const USAGE: &str = "usage:
  in the job:  mpirun <devices with -P pmix --control none> : -n 1 fairmq-pmix-command [--timeout S] COMMAND...
               mpirun <devices ...> : -n 1 fairmq-pmix-command [--timeout S] serve
  operator:    fairmq-pmix-command --namespace NS [--timeout S] COMMAND...
               fairmq-pmix-command --namespace NS --prometheus-targets FILE [COMMAND...]
               fairmq-pmix-command --list
COMMAND: run | stop | state | change-state TRANSITION | wait-for-state STATE | targets
--timeout S: how long the commands may take, 1 s to a day (default 120 s)
--prometheus-targets FILE: after the commands, write the devices' metrics endpoints (those run
  with --metrics-address) to FILE as Prometheus file_sd JSON (labels device, rank)";

/// Runs `fairmq-pmix-command` with `args`, which do not include the program name. Returns the
/// exit code.
pub fn main_with_args(args: &[String]) -> u8 {
    crate::logging::init();
    match run(args) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            log::error!("fairmq-pmix-command: {e}");
            1
        }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
struct Request {
    timeout: Duration,
    namespace: Option<String>,
    /// The file where `--prometheus-targets` writes the targets. The option adds the `targets`
    /// command last.
    targets_file: Option<std::path::PathBuf>,
    list: bool,
    serve: bool,
    /// The commands as given (an operator sends these words) and, in `steps`, as parsed. Every
    /// command is checked before any runs.
    words: Vec<String>,
    steps: Vec<Step>,
}

fn parse(args: &[String]) -> Result<Option<Request>, BoxError> {
    let mut r = Request {
        timeout: Duration::from_secs(120),
        namespace: None,
        targets_file: None,
        list: false,
        serve: false,
        words: Vec::new(),
        steps: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--timeout" => r.timeout = steps::timeout(it.next().ok_or("--timeout needs seconds")?)?,
            "--namespace" => r.namespace = Some(it.next().ok_or("--namespace needs the job's PMIx namespace")?.clone()),
            "--list" => r.list = true,
            "--prometheus-targets" => {
                r.targets_file = Some(it.next().ok_or("--prometheus-targets needs a file")?.into());
            }
            "-h" | "--help" => return Ok(None),
            _ => r.words.push(a.clone()),
        }
    }
    if r.list {
        return Ok(Some(r));
    }
    if r.words == ["serve"] {
        if r.namespace.is_some() {
            return Err("serve runs in the job, not with --namespace".into());
        }
        if r.targets_file.is_some() {
            return Err("--prometheus-targets runs commands; serve takes none".into());
        }
        r.serve = true;
        return Ok(Some(r));
    }
    if r.targets_file.is_some() {
        r.words.push("targets".into());
    }
    r.steps = steps::parse(&r.words).map_err(|e| format!("{e}\n{USAGE}"))?;
    Ok(Some(r))
}

fn run(args: &[String]) -> Result<bool, BoxError> {
    let Some(r) = parse(args)? else {
        println!("{USAGE}");
        return Ok(true);
    };
    if r.list {
        for ns in operator::served_namespaces()? {
            println!("{ns}");
        }
        return Ok(true);
    }
    if let Some(ns) = &r.namespace {
        let text = operator::send(ns, r.timeout, &r.words)?;
        output(&r, &text)?;
        return Ok(true);
    }
    let (namespace, me) = ffi::init()?;
    let result = Controller::join(me, r.timeout).and_then(|mut c| {
        if r.serve {
            operator::serve(&mut c, &namespace, r.timeout)
        } else {
            output(&r, &c.execute(&r.steps, r.timeout)?)?;
            Ok(c.all_exiting())
        }
    });
    if let Err(e) = ffi::finalize() {
        log::warn!("pmix: {e}");
    }
    result
}

/// Prints what the commands printed. With `--prometheus-targets`, the last line, which `targets`
/// printed, goes to the file instead.
fn output(r: &Request, text: &str) -> Result<(), BoxError> {
    let Some(file) = &r.targets_file else {
        print!("{text}");
        return Ok(());
    };
    let body = text.strip_suffix('\n').unwrap_or(text);
    let (before, json) = body.rsplit_once('\n').unwrap_or(("", body));
    if !before.is_empty() {
        println!("{before}");
    }
    crate::metrics::targets::write(file, json).map_err(|e| format!("writing {}: {e}", file.display()))?;
    log::info!("pmix command: the targets of the job's metrics endpoints are in {}", file.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn command_lines_are_checked_before_anything_runs() {
        let r = parse(&args(&["--namespace", "1234", "--timeout", "9", "stop", "state"])).unwrap().unwrap();
        assert_eq!(
            (r.timeout, r.namespace.as_deref(), r.serve, r.steps),
            (Duration::from_secs(9), Some("1234"), false, vec![Step::Stop, Step::State])
        );
        assert!(parse(&args(&["serve"])).unwrap().unwrap().serve);
        let r = parse(&args(&["--namespace", "n", "--prometheus-targets", "/tmp/t.json"])).unwrap().unwrap();
        assert_eq!((r.words, r.steps), (vec!["targets".to_owned()], vec![Step::Targets]));
        assert!(parse(&args(&["--help"])).unwrap().is_none());
        for bad in [
            &["--timeout", "soon", "run"][..],
            &["--timeout", "0", "run"],
            &["--timeout", "18446744073709551615", "run"],
            &["--timeout"],
            &["--namespace"],
            &[],
            &["--namespace", "x", "serve"],
            &["run", "stpo"],
            &["serve", "run"],
            &["--prometheus-targets"],
            &["--prometheus-targets", "f", "serve"],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
