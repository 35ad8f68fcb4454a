//! The commands of `fairmq-pmix-command`, parsed whole before any runs: a typo at the end of a
//! list must not leave the devices started and then without their controller.

use crate::state::{State, Transition};
use crate::BoxError;
use std::time::Duration;

/// One command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// FairMQ's startup sequence for every device, up to RUNNING.
    Run,
    /// The guide's ordered stop.
    Stop,
    /// Each device's id and state.
    State,
    ChangeState(Transition),
    WaitForState(State),
    /// The devices' metrics endpoints as Prometheus file_sd JSON, on one line.
    Targets,
}

/// The longest a command may wait for the devices: a day.
pub(super) const MAX_TIMEOUT_S: u64 = 86_400;

/// Reads `--timeout` seconds: a whole number from 1 to a day.
pub(super) fn timeout(text: &str) -> Result<Duration, BoxError> {
    match text.parse::<u64>() {
        Ok(s) if (1..=MAX_TIMEOUT_S).contains(&s) => Ok(Duration::from_secs(s)),
        _ => Err(format!("the timeout '{text}' is not a number of seconds from 1 to {MAX_TIMEOUT_S}").into()),
    }
}

/// The commands `words` name, in order; an error names the first bad word.
pub(super) fn parse(words: &[String]) -> Result<Vec<Step>, BoxError> {
    let mut steps = Vec::new();
    let mut words = words.iter();
    while let Some(w) = words.next() {
        steps.push(match w.as_str() {
            "run" => Step::Run,
            "stop" => Step::Stop,
            "state" => Step::State,
            "targets" => Step::Targets,
            "change-state" => {
                let t = words.next().ok_or("change-state needs a transition")?;
                Step::ChangeState(t.parse().map_err(|e| format!("change-state {t}: {e}"))?)
            }
            "wait-for-state" => {
                let s = words.next().ok_or("wait-for-state needs a state")?;
                Step::WaitForState(s.parse().map_err(|e| format!("wait-for-state {s}: {e}"))?)
            }
            other => return Err(format!("unknown command '{other}'").into()),
        });
    }
    if steps.is_empty() {
        return Err("no command given".into());
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn every_word_is_checked_before_any_command_runs() {
        assert_eq!(
            parse(&words(&["run", "change-state", "STOP", "wait-for-state", "READY", "state", "stop", "targets"]))
                .unwrap(),
            [
                Step::Run,
                Step::ChangeState(Transition::Stop),
                Step::WaitForState(State::Ready),
                Step::State,
                Step::Stop,
                Step::Targets
            ]
        );
        for bad in [&["run", "stpo"][..], &["change-state"], &["change-state", "FLY"], &["wait-for-state", "X"], &[]] {
            assert!(parse(&words(bad)).is_err(), "{bad:?}");
        }
        assert!(parse(&words(&["change-state", "FLY"])).unwrap_err().to_string().contains("FLY"));
        assert_eq!(timeout("30").unwrap(), Duration::from_secs(30));
        for bad in ["0", "-1", "86401", "18446744073709551615", "soon", ""] {
            assert!(timeout(bad).is_err(), "{bad}");
        }
    }
}
