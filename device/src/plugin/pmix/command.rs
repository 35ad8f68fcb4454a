//! `fairmq-pmix-command`: a process of the PMIx job that drives every device of it (which load
//! `-P pmix` and run `--control none`). It takes part in the plugin's two fences, publishes the
//! address of its ROUTER with the first, and runs its commands in order:
//!
//! - `run`: FairMQ's startup sequence for every device, up to RUNNING.
//! - `stop`: the guide's ordered stop: Stop and ResetTask for the sources (a stopped source sends
//!   its end messages while it resets), wait until every other device left RUNNING by itself
//!   after its end messages, then ResetTask, ResetDevice and End for all.
//! - `change-state <TRANSITION>` for every device; `wait-for-state <STATE>` until every device
//!   entered it; `state`: prints each device's id and state.
//!
//! Sources are devices without a receiving channel (only push or pub), from the channel types
//! each device published with its bound addresses.

use super::{ffi, reachable, BOUND_KEY, CONTROLLER_KEY, ID_KEY, ROLE_KEY};
use crate::state::{State, Transition};
use crate::BoxError;
use fairmq_zmq::{AttachOptions, Message, Method, SocketType, Transport};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One device of the job as the command sees it.
#[derive(Debug)]
struct Peer {
    id: String,
    role: String,
    identity: Option<Vec<u8>>,
    state: State,
    /// Every state it entered, in order.
    entered: Vec<State>,
}

impl Peer {
    fn receives(&self) -> bool {
        self.role.split(',').any(|t| !matches!(t, "push" | "pub" | ""))
    }
}

struct Command {
    socket: fairmq_zmq::Socket,
    peers: BTreeMap<u32, Peer>,
    fenced: bool,
    timeout: Duration,
    fence_timeout: i32,
    _transport: Transport,
}

/// Runs `fairmq-pmix-command` with `args` (without the program name); the exit code.
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

fn run(args: &[String]) -> Result<bool, BoxError> {
    let mut timeout_s = 120u64;
    let mut words: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--timeout" => timeout_s = it.next().ok_or("--timeout needs seconds")?.parse()?,
            "-h" | "--help" => {
                println!("usage: mpirun ... : -n 1 fairmq-pmix-command [--timeout S] run|stop|state|change-state T|wait-for-state S ...");
                return Ok(true);
            }
            _ => words.push(a.clone()),
        }
    }
    let (_, me) = ffi::init()?;
    let result = drive(me, timeout_s, &words);
    if let Err(e) = ffi::finalize() {
        log::warn!("pmix: {e}");
    }
    result
}

fn drive(me: u32, timeout_s: u64, words: &[String]) -> Result<bool, BoxError> {
    let size = ffi::job_size()?;
    let transport = Transport::new("pmix-command")?;
    let socket = transport.socket(SocketType::Router, "pmix-command")?;
    let bound = socket.attach("tcp://*:0", &AttachOptions::new(Some(Method::Bind)))?;
    let address = reachable(&bound, "default");
    ffi::put(ID_KEY, "")?;
    ffi::put(CONTROLLER_KEY, &address)?;
    let fence_timeout = i32::try_from(timeout_s).unwrap_or(i32::MAX);
    ffi::fence(fence_timeout)?;
    let mut peers = BTreeMap::new();
    for r in (0..size).filter(|&r| r != me) {
        let id = ffi::get(r, ID_KEY)?;
        peers.insert(r, Peer { id, role: String::new(), identity: None, state: State::Undefined, entered: Vec::new() });
    }
    let mut c = Command {
        socket,
        peers,
        fenced: false,
        timeout: Duration::from_secs(timeout_s),
        fence_timeout,
        _transport: transport,
    };
    c.wait("every device said hello", |c| c.peers.values().all(|p| p.identity.is_some()))?;
    let mut words = words.iter();
    while let Some(w) = words.next() {
        match w.as_str() {
            "run" => c.startup()?,
            "stop" => c.ordered_stop()?,
            "state" => {
                for p in c.peers.values() {
                    println!("{}: {}", p.id, p.state);
                }
            }
            "change-state" => {
                let t: Transition = words.next().ok_or("change-state needs a transition")?.parse()?;
                c.request_all(t, |_| true)?;
            }
            "wait-for-state" => {
                let s: State = words.next().ok_or("wait-for-state needs a state")?.parse()?;
                let (all, marks): (Vec<u32>, _) = (c.peers.keys().copied().collect(), c.marks());
                c.wait(&format!("every device entered {s}"), |c| c.all_entered_since(&all, &marks, s))?;
            }
            other => return Err(format!("unknown command '{other}'").into()),
        }
    }
    Ok(c.peers.values().all(|p| p.state == State::Exiting))
}

/// Applies a device's report (`hello\t<rank>\t<STATE>`, `state\t<STATE>`) from the router
/// identity `identity`. What another process sends is not trusted: a report that is malformed,
/// names a rank that is no device of the job, or comes from an identity that said no hello is
/// logged and ignored, never the end of the command.
fn apply_report(peers: &mut BTreeMap<u32, Peer>, identity: &[u8], text: &str) {
    let fields: Vec<&str> = text.split('\t').collect();
    match fields.as_slice() {
        ["hello", rank, state] => match (rank.parse::<u32>().ok().and_then(|r| peers.get_mut(&r)), state.parse()) {
            // The first hello of a rank names its link; a later one (another connection that
            // claims the rank) would take the device's commands away from it.
            (Some(p), Ok(s)) if p.identity.is_none() => {
                p.identity = Some(identity.to_vec());
                p.state = s;
            }
            (Some(p), Ok(_)) => log::warn!("pmix command: ignored a second hello for device {}: '{text}'", p.id),
            _ => log::warn!("pmix command: ignored a hello that names no device of the job: '{text}'"),
        },
        ["state", state] => match (peers.values_mut().find(|p| p.identity.as_deref() == Some(identity)), state.parse())
        {
            (Some(p), Ok(s)) => {
                log::info!("pmix command: {} ---> {s}", p.id);
                p.state = s;
                p.entered.push(s);
            }
            _ => log::warn!("pmix command: ignored a state report '{text}' (unknown sender or state)"),
        },
        _ => log::warn!("pmix command: unknown report '{text}'"),
    }
}

impl Command {
    /// How many states each device had entered so far.
    fn marks(&self) -> BTreeMap<u32, usize> {
        self.peers.iter().map(|(r, p)| (*r, p.entered.len())).collect()
    }

    /// Whether each device of `ranks` entered `s` since `marks`.
    fn all_entered_since(&self, ranks: &[u32], marks: &BTreeMap<u32, usize>, s: State) -> bool {
        ranks.iter().all(|r| {
            let p = &self.peers[r];
            p.entered[marks.get(r).copied().unwrap_or(0)..].contains(&s)
        })
    }

    fn request_all(&mut self, t: Transition, which: impl Fn(&Peer) -> bool) -> Result<(), BoxError> {
        let targets: Vec<Vec<u8>> =
            self.peers.values().filter(|p| which(p)).filter_map(|p| p.identity.clone()).collect();
        for identity in targets {
            let mut parts =
                vec![Message::from_slice(&identity), Message::from_slice(format!("change-state {t}").as_bytes())];
            self.socket.send_parts(&mut parts, 10_000)?;
        }
        Ok(())
    }

    /// Requests `t` of every device and waits until each entered `target`.
    fn step(&mut self, t: Transition, target: State) -> Result<(), BoxError> {
        self.step_for(t, target, |_| true)
    }

    fn startup(&mut self) -> Result<(), BoxError> {
        self.step(Transition::InitDevice, State::InitializingDevice)?;
        self.step(Transition::CompleteInit, State::Initialized)?;
        self.step(Transition::Bind, State::Bound)?;
        self.step(Transition::Connect, State::DeviceReady)?;
        self.step(Transition::InitTask, State::Ready)?;
        self.step(Transition::Run, State::Running)
    }

    fn ordered_stop(&mut self) -> Result<(), BoxError> {
        if !self.fenced {
            return Err("stop needs devices that were started (run)".into());
        }
        let source = |p: &Peer| !p.receives();
        log::info!("pmix command: stopping the sources");
        self.request_all(Transition::Stop, |p| source(p) && p.state == State::Running)?;
        self.wait("every source left RUNNING", |c| {
            c.peers.values().filter(|p| source(p)).all(|p| p.state != State::Running)
        })?;
        // A source that was stopped sends its end messages while it resets its task (the guide).
        self.step_for(Transition::ResetTask, State::DeviceReady, |p| source(p) && p.state == State::Ready)?;
        self.wait("every processor and sink left RUNNING after its end messages", |c| {
            c.peers.values().all(|p| p.state != State::Running)
        })?;
        log::info!("pmix command: the data has drained; resetting every device");
        self.step_for(Transition::ResetTask, State::DeviceReady, |p| p.state == State::Ready)?;
        self.step(Transition::ResetDevice, State::Idle)?;
        self.step(Transition::End, State::Exiting)
    }

    /// Requests `t` of the devices `which` selects and waits until each of them entered `target`.
    fn step_for(&mut self, t: Transition, target: State, which: impl Fn(&Peer) -> bool) -> Result<(), BoxError> {
        let chosen: Vec<u32> = self.peers.iter().filter(|(_, p)| which(p)).map(|(r, _)| *r).collect();
        let marks = self.marks();
        self.request_all(t, |p| which(p))?;
        self.wait(&format!("every chosen device entered {target}"), |c| c.all_entered_since(&chosen, &marks, target))
    }

    /// Handles what devices report until `done` holds; an error after the timeout.
    fn wait(&mut self, what: &str, done: impl Fn(&Command) -> bool) -> Result<(), BoxError> {
        let deadline = Instant::now() + self.timeout;
        while !done(self) {
            if Instant::now() >= deadline {
                return Err(format!("timed out waiting until {what}").into());
            }
            if let Some(e) = self.peers.values().find(|p| p.state == State::Error) {
                return Err(format!("device {} is in ERROR", e.id).into());
            }
            self.receive_one()?;
        }
        Ok(())
    }

    fn receive_one(&mut self) -> Result<(), BoxError> {
        let mut parts = Vec::new();
        if self.socket.receive_parts(&mut parts, 100).is_err() || parts.len() != 2 {
            return Ok(());
        }
        let text = String::from_utf8_lossy(parts[1].data()).into_owned();
        apply_report(&mut self.peers, parts[0].data(), &text);
        // The second fence (addresses) once every device is BOUND: they wait in it too.
        if !self.fenced && self.peers.values().all(|p| p.entered.contains(&State::Bound)) {
            // Devices read every process's bound addresses: the command binds none.
            ffi::put(BOUND_KEY, "")?;
            ffi::put(ROLE_KEY, "")?;
            ffi::fence(self.fence_timeout)?;
            self.fenced = true;
            for (r, p) in &mut self.peers {
                p.role = ffi::get(*r, ROLE_KEY)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_reports_are_ignored_and_good_ones_applied() {
        let mut peers = BTreeMap::new();
        peers.insert(
            1,
            Peer {
                id: "sink1".into(),
                role: String::new(),
                identity: None,
                state: State::Undefined,
                entered: Vec::new(),
            },
        );
        for bad in ["hello\tx\tIDLE", "hello\t7\tIDLE", "hello\t1\tSLEEPING", "state\tIDLE", "hello", ""] {
            apply_report(&mut peers, b"id-a", bad);
        }
        assert_eq!((peers[&1].identity.as_deref(), peers[&1].state), (None, State::Undefined));
        apply_report(&mut peers, b"id-a", "hello\t1\tIDLE");
        apply_report(&mut peers, b"id-b", "hello\t1\tIDLE");
        apply_report(&mut peers, b"id-b", "state\tRUNNING");
        apply_report(&mut peers, b"id-a", "state\tNOT A STATE");
        apply_report(&mut peers, b"id-a", "state\tINITIALIZING DEVICE");
        let p = &peers[&1];
        assert_eq!(
            (p.identity.as_deref(), p.state, p.entered.clone()),
            (Some(&b"id-a"[..]), State::InitializingDevice, vec![State::InitializingDevice])
        );
    }
}
