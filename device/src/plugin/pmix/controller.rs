//! The job's controller inside `fairmq-pmix-command`: a process of the PMIx job that drives every
//! device of it (which load `-P pmix` and run `--control none`). It takes part in the plugin's
//! two fences, publishes the address of its ROUTER with the first, and each device's plugin links
//! to it (`link.rs`). Its commands:
//!
//! - `run`: FairMQ's startup sequence for every device, up to RUNNING.
//! - `stop`: the guide's ordered stop: Stop and ResetTask for the sources (a stopped source sends
//!   its end messages while it resets), wait until every other device left RUNNING by itself
//!   after its end messages, then ResetTask, ResetDevice and End for all.
//! - `change-state <TRANSITION>` for every device; `wait-for-state <STATE>` until every device is
//!   in it (or entered it since the command began); `state`: each device's id and state.
//!
//! Sources are devices without a receiving channel (only push or pub), from the channel types
//! each device published with its bound addresses.

use super::steps::Step;
use super::{ffi, reachable, unique_id, BOUND_KEY, CONTROLLER_KEY, ID_KEY, METRICS_KEY, ROLE_KEY};
use crate::state::{State, Transition};
use crate::BoxError;
use fairmq_zmq::{AttachOptions, Message, Method, SocketType, Transport};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One device of the job as the controller sees it.
#[derive(Debug)]
struct Peer {
    id: String,
    role: String,
    identity: Option<Vec<u8>>,
    state: State,
    /// Every state that the device entered, in order.
    entered: Vec<State>,
    /// The device's metrics endpoint as `host:port`. It is empty when there is none.
    metrics: String,
}

impl Peer {
    fn receives(&self) -> bool {
        self.role.split(',').any(|t| !matches!(t, "push" | "pub" | ""))
    }
}

/// The controller of a PMIx job's devices (this process is a member of the job).
pub(super) struct Controller {
    socket: fairmq_zmq::Socket,
    peers: BTreeMap<u32, Peer>,
    fenced: bool,
    /// When the current command (or the wait for the devices' hellos) gives up.
    deadline: Instant,
    fence_timeout: i32,
    /// The secret that a device's hello must carry. Only processes of the job can read it, from
    /// PMIx.
    token: String,
    /// The transport owns the socket's context: it must outlive the socket.
    pub(super) transport: Transport,
}

/// 16 random bytes as hex.
fn new_token() -> Result<String, BoxError> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

impl Controller {
    /// Joins the job as rank `me`. Binds the ROUTER on the address that other hosts reach, not on
    /// every interface. Publishes the ROUTER's address and a secret in the first fence. Then waits,
    /// up to `timeout`, until every device of the job has linked to the ROUTER.
    pub(super) fn join(me: u32, timeout: Duration) -> Result<Controller, BoxError> {
        let size = ffi::job_size()?;
        let transport = Transport::new("pmix-command")?;
        let socket = super::control_socket(&transport, SocketType::Router, "pmix-command")?;
        let bound = socket.attach(&reachable("tcp://*:0", "default"), &AttachOptions::new(Some(Method::Bind)))?;
        let token = new_token()?;
        ffi::put(ID_KEY, "")?;
        ffi::put(CONTROLLER_KEY, &format!("{bound}\t{token}"))?;
        ffi::put(METRICS_KEY, "")?;
        let fence_timeout = i32::try_from(timeout.as_secs()).unwrap_or(i32::MAX);
        ffi::fence(fence_timeout)?;
        let ids = (0..size).map(|r| if r == me { Ok(String::new()) } else { ffi::get(r, ID_KEY) });
        let ids = ids.collect::<Result<Vec<_>, _>>()?;
        let mut peers = BTreeMap::new();
        for r in (0..size).filter(|&r| r != me) {
            // Use the id that the device itself took. That id is numbered when several processes
            // share an id.
            let id = unique_id(&ids, r as usize).unwrap_or_else(|| ids[r as usize].clone());
            // A device whose build publishes no metrics endpoint gets an empty one.
            let metrics = ffi::get(r, METRICS_KEY).unwrap_or_default();
            let (role, state, entered) = (String::new(), State::Undefined, Vec::new());
            peers.insert(r, Peer { id, role, identity: None, state, entered, metrics });
        }
        let deadline = Instant::now() + timeout;
        let mut c = Controller { socket, peers, fenced: false, deadline, fence_timeout, token, transport };
        c.wait("every device said hello", |c| c.peers.values().all(|p| p.identity.is_some()))?;
        Ok(c)
    }

    /// Runs `steps` in order, all within `timeout`. Returns what they print (`state`).
    pub(super) fn execute(&mut self, steps: &[Step], timeout: Duration) -> Result<String, BoxError> {
        self.deadline = Instant::now() + timeout;
        let mut out = String::new();
        for step in steps {
            match *step {
                Step::Run => self.startup()?,
                Step::Stop => self.ordered_stop()?,
                Step::State => {
                    for p in self.peers.values() {
                        out.push_str(&format!("{}: {}\n", p.id, p.state));
                    }
                }
                Step::ChangeState(t) => self.request_all(t, |_| true)?,
                Step::Targets => {
                    // One group per device that serves metrics.
                    let devices = self
                        .peers
                        .iter()
                        .filter(|(_, p)| !p.metrics.is_empty())
                        .map(|(r, p)| (p.metrics.clone(), vec![("device", p.id.clone()), ("rank", r.to_string())]));
                    out.push_str(&crate::metrics::targets::file_sd(devices));
                    out.push('\n');
                }
                Step::WaitForState(s) => {
                    let marks = self.marks();
                    self.wait(&format!("every device is in {s}"), |c| {
                        c.peers.iter().all(|(r, p)| p.state == s || c.entered_since(*r, &marks, s))
                    })?;
                }
            }
        }
        Ok(out)
    }

    /// Whether every device is EXITING.
    pub(super) fn all_exiting(&self) -> bool {
        self.peers.values().all(|p| p.state == State::Exiting)
    }
}

/// Applies a device's report, received from the router identity `identity`. A report is
/// `hello\t<rank>\t<STATE>\t<token>` or `state\t<STATE>`.
///
/// What another process sends is not trusted. `apply_report` logs and ignores a report that:
///
/// - is malformed,
/// - names a rank that is no device of the job,
/// - carries a wrong token, or
/// - comes from an identity that said no hello.
///
/// Such a report never ends the command. The log never shows the token.
fn apply_report(peers: &mut BTreeMap<u32, Peer>, token: &str, identity: &[u8], text: &str) {
    let fields: Vec<&str> = text.split('\t').collect();
    match fields.as_slice() {
        ["hello", rank, state, t] if *t == token => {
            match (rank.parse::<u32>().ok().and_then(|r| peers.get_mut(&r)), state.parse()) {
                // The first hello of a rank names the rank's link. A later hello comes from
                // another connection that claims the rank. Accepting it would take the device's
                // commands away from the first link.
                (Some(p), Ok(s)) if p.identity.is_none() => {
                    p.identity = Some(identity.to_vec());
                    p.state = s;
                }
                (Some(p), Ok(_)) => log::warn!("pmix command: ignored a second hello for device {}", p.id),
                _ => log::warn!("pmix command: ignored a hello that names no device of the job (rank '{rank}')"),
            }
        }
        ["hello", ..] => log::warn!("pmix command: ignored a hello without the job's token"),
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

impl Controller {
    /// How many states each device had entered so far.
    fn marks(&self) -> BTreeMap<u32, usize> {
        self.peers.iter().map(|(r, p)| (*r, p.entered.len())).collect()
    }

    /// Whether device `rank` entered `s` after `marks` were taken.
    fn entered_since(&self, rank: u32, marks: &BTreeMap<u32, usize>, s: State) -> bool {
        let entered = self.peers.get(&rank).map_or(&[][..], |p| &p.entered[..]);
        entered.get(marks.get(&rank).copied().unwrap_or(0)..).is_some_and(|e| e.contains(&s))
    }

    /// Whether each device of `ranks` entered `s` after `marks` were taken.
    fn all_entered_since(&self, ranks: &[u32], marks: &BTreeMap<u32, usize>, s: State) -> bool {
        ranks.iter().all(|&r| self.entered_since(r, marks, s))
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

    /// Requests transition `t` of every device, and waits until each has entered `target`.
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
        // As the guide describes, a stopped source sends its end messages while it resets its
        // task.
        self.step_for(Transition::ResetTask, State::DeviceReady, |p| source(p) && p.state == State::Ready)?;
        self.wait("every processor and sink left RUNNING after its end messages", |c| {
            c.peers.values().all(|p| p.state != State::Running)
        })?;
        log::info!("pmix command: the data has drained; resetting every device");
        self.step_for(Transition::ResetTask, State::DeviceReady, |p| p.state == State::Ready)?;
        self.step(Transition::ResetDevice, State::Idle)?;
        self.step(Transition::End, State::Exiting)
    }

    /// Requests transition `t` of the devices that `which` selects, and waits until each of them
    /// has entered `target`.
    fn step_for(&mut self, t: Transition, target: State, which: impl Fn(&Peer) -> bool) -> Result<(), BoxError> {
        let chosen: Vec<u32> = self.peers.iter().filter(|(_, p)| which(p)).map(|(r, _)| *r).collect();
        let marks = self.marks();
        self.request_all(t, |p| which(p))?;
        self.wait(&format!("every chosen device entered {target}"), |c| c.all_entered_since(&chosen, &marks, target))
    }

    /// Handles the devices' reports until `done` holds. Returns an error once the deadline has
    /// passed.
    fn wait(&mut self, what: &str, done: impl Fn(&Controller) -> bool) -> Result<(), BoxError> {
        while !done(self) {
            if Instant::now() >= self.deadline {
                return Err(format!("timed out waiting until {what}").into());
            }
            if let Some(e) = self.peers.values().find(|p| p.state == State::Error) {
                return Err(format!("device {} is in ERROR", e.id).into());
            }
            self.receive_one(100)?;
        }
        Ok(())
    }

    /// Applies at most one report that the devices send within `timeout_ms`. Joins the second
    /// fence once every device has entered BOUND.
    pub(super) fn receive_one(&mut self, timeout_ms: i32) -> Result<(), BoxError> {
        let mut parts = Vec::new();
        if self.socket.receive_parts(&mut parts, timeout_ms).is_err() || parts.len() != 2 {
            return Ok(());
        }
        let text = String::from_utf8_lossy(parts[1].data()).into_owned();
        apply_report(&mut self.peers, &self.token, parts[0].data(), &text);
        // Join the second fence, for the addresses, once every device has entered BOUND. The
        // devices wait in that fence too.
        if !self.fenced && self.peers.values().all(|p| p.entered.contains(&State::Bound)) {
            // Devices read the bound addresses of every process. The command binds none, so it
            // publishes empty values.
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
                metrics: String::new(),
            },
        );
        for bad in [
            "hello\tx\tIDLE\tT",
            "hello\t7\tIDLE\tT",
            "hello\t1\tSLEEPING\tT",
            "hello\t1\tIDLE",
            "hello\t1\tIDLE\twrong",
            "state\tIDLE",
            "hello",
            "",
        ] {
            apply_report(&mut peers, "T", b"id-a", bad);
        }
        assert_eq!((peers[&1].identity.as_deref(), peers[&1].state), (None, State::Undefined));
        apply_report(&mut peers, "T", b"id-a", "hello\t1\tIDLE\tT");
        apply_report(&mut peers, "T", b"id-b", "hello\t1\tIDLE\tT");
        apply_report(&mut peers, "T", b"id-b", "state\tRUNNING");
        apply_report(&mut peers, "T", b"id-a", "state\tNOT A STATE");
        apply_report(&mut peers, "T", b"id-a", "state\tINITIALIZING DEVICE");
        let p = &peers[&1];
        assert_eq!(
            (p.identity.as_deref(), p.state, p.entered.clone()),
            (Some(&b"id-a"[..]), State::InitializingDevice, vec![State::InitializingDevice])
        );
    }
}
