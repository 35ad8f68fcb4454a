//! Helpers for device tests: a device that records its hooks and fails where told, a spawned
//! device with a controller handle, unique sessions and ipc paths, and shared-memory clean-up.
#![allow(dead_code)]

use fairmq::{
    config_from_args, spawn_device, Context, Device, DeviceHandle, HookResult, Properties, State, Transition,
};
use fairmq_shm::testing::session::{unique_session, SessionGuard};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

pub const T: Option<Duration> = Some(Duration::from_secs(60));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Error,
    Panic,
    ErrorFound,
}

/// Records every hook call; fails in `fail_in` the way `how` says.
#[derive(Default)]
pub struct Recorder {
    pub log: Arc<Mutex<Vec<&'static str>>>,
    pub fail_in: Option<(&'static str, Failure)>,
    pub runs: usize,
}

impl Recorder {
    fn hook(&self, name: &'static str, ctx: &Context) -> HookResult {
        self.log.lock().push(name);
        match self.fail_in {
            Some((n, how)) if n == name => match how {
                Failure::Error => Err(format!("failure injected in {name}").into()),
                Failure::Panic => panic!("panic injected in {name}"),
                Failure::ErrorFound => {
                    assert!(ctx.change_state(Transition::ErrorFound));
                    Ok(())
                }
            },
            _ => Ok(()),
        }
    }
}

impl Device for Recorder {
    fn init(&mut self, ctx: &Context) -> HookResult {
        self.hook("init", ctx)
    }
    fn bind(&mut self, ctx: &Context) -> HookResult {
        self.hook("bind", ctx)
    }
    fn connect(&mut self, ctx: &Context) -> HookResult {
        self.hook("connect", ctx)
    }
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.hook("init_task", ctx)
    }
    fn pre_run(&mut self, ctx: &Context) -> HookResult {
        self.hook("pre_run", ctx)
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        self.hook("conditional_run", ctx)?;
        self.runs += 1;
        Ok(self.runs < 3)
    }
    fn run(&mut self, ctx: &Context) -> HookResult {
        self.hook("run", ctx)
    }
    fn post_run(&mut self, ctx: &Context) -> HookResult {
        self.hook("post_run", ctx)
    }
    fn reset_task(&mut self, ctx: &Context) -> HookResult {
        self.hook("reset_task", ctx)
    }
    fn reset(&mut self, ctx: &Context) -> HookResult {
        self.hook("reset", ctx)
    }
}

/// A configuration from command-line words.
pub fn config(args: &str) -> Arc<Properties> {
    let v: Vec<&str> = args.split_whitespace().collect();
    config_from_args(&v, vec![]).expect("valid test arguments")
}

/// A device running on its thread; joined (after EXITING or ERROR) on drop.
pub struct Running {
    pub h: DeviceHandle,
    thread: Option<std::thread::JoinHandle<Result<(), fairmq::state_machine::ErrorState>>>,
}

pub fn spawn<D: Device + 'static>(d: D, cfg: Arc<Properties>) -> Running {
    let (h, t) = spawn_device(d, cfg);
    Running { h, thread: Some(t) }
}

impl Running {
    pub fn go(&self, t: Transition, s: State) {
        assert!(self.h.change_state(t), "{t} refused in {}", self.h.current_state());
        assert!(self.h.wait_for_state(s, T).expect("not ERROR"), "did not reach {s}");
    }

    /// IDLE -> READY.
    pub fn to_ready(&self) {
        self.go(Transition::InitDevice, State::InitializingDevice);
        self.go(Transition::CompleteInit, State::Initialized);
        self.go(Transition::Bind, State::Bound);
        self.go(Transition::Connect, State::DeviceReady);
        self.go(Transition::InitTask, State::Ready);
    }

    /// READY -> RUNNING, then waits until the run ends by itself (back in READY).
    pub fn run_once(&self) {
        self.go(Transition::Run, State::Running);
        assert!(self.h.wait_for_state(State::Ready, T).expect("not ERROR"), "did not leave RUNNING");
    }

    /// READY -> EXITING. A device whose run ended leaves RUNNING by itself, perhaps a moment after
    /// the test saw the effect of its last transfer: that is waited for first.
    pub fn ready_to_exit(&self) {
        if self.h.current_state() == State::Running {
            assert!(self.h.wait_for_state(State::Ready, T).expect("not ERROR"), "did not leave RUNNING");
        }
        self.go(Transition::ResetTask, State::DeviceReady);
        self.go(Transition::ResetDevice, State::Idle);
        self.go(Transition::End, State::Exiting);
    }

    /// Waits for the state loop to end; returns whether it ended in EXITING.
    pub fn join(mut self) -> bool {
        self.thread.take().unwrap().join().expect("state loop panicked").is_ok()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            if !std::thread::panicking() {
                let _ = t.join();
            }
        }
    }
}

/// A unique session name whose shared memory is removed on drop.
pub struct Session {
    pub name: String,
    pub dir: tempfile::TempDir,
    _guard: SessionGuard,
}

impl Session {
    pub fn new() -> Session {
        let name = unique_session("dev");
        Session { _guard: SessionGuard::new(&name), name, dir: tempfile::tempdir().unwrap() }
    }
    pub fn ipc(&self, what: &str) -> String {
        format!("ipc://{}/{what}", self.dir.path().display())
    }

    /// Names of this session's objects now in /dev/shm.
    pub fn objects(&self) -> Vec<String> {
        fairmq_shm::testing::session::session_objects(&self.name)
    }
}

pub const TRANSPORTS: [&str; 2] = ["zeromq", "shmem"];

/// The shmId of session `s`.
pub fn shm_id(s: &Session) -> String {
    fairmq_shm::shm_id(&s.name)
}

/// A shmem transport `id` of session `s` in the test process, with a 20 MB segment.
pub fn shm_transport(s: &Session, id: &str) -> fairmq_shm::Transport {
    let mut c = fairmq_shm::ShmConfig::new(id, &s.name);
    c.segment_size = 20_000_000;
    fairmq_shm::Transport::new(&c).expect("shm transport")
}

/// A device process of session `s`: `--control <control>`, plain log lines at severity info, a
/// segment of `segment` bytes unless `extra` gives one, then `extra`.
pub fn launch_device(
    exe: &str,
    id: &str,
    s: &Session,
    transport: &str,
    control: &str,
    segment: &str,
    extra: &[&str],
) -> process::Proc {
    let mut args = vec!["--id", id, "--control", control, "--color", "false", "--severity", "info"];
    args.extend(["--transport", transport, "--session", &s.name]);
    if !extra.contains(&"--shm-segment-size") {
        args.extend(["--shm-segment-size", segment]);
    }
    args.extend_from_slice(extra);
    process::start(exe, &args, None)
}

/// A transport of session `s` in the test process (a peer of the devices under test), with a
/// 20 MB segment unless `configure` sets other properties.
pub fn session_transport(
    s: &Session,
    kind: fairmq::TransportKind,
    configure: impl FnOnce(&Properties),
) -> fairmq::Transport {
    let p = Properties::new();
    p.set("session", s.name.clone());
    p.set("shm-segment-size", 20_000_000u64);
    configure(&p);
    fairmq::transport::create(kind, "peer", &p).expect("transport of the session")
}

/// A socket of `t` bound or connected to `address`.
pub fn attached_socket(
    t: &fairmq::Transport,
    ty: fairmq::SocketType,
    address: &str,
    method: fairmq_zmq::Method,
) -> fairmq::Socket {
    let s = t.socket(ty, "peer").expect("socket");
    s.attach(address, &fairmq_zmq::AttachOptions::new(Some(method))).expect("attach");
    s
}

type Hook<T> = Option<Box<dyn FnMut(&Context) -> HookResult<T> + Send>>;
type DataHook = Option<Box<dyn FnMut(&Context, &str, &mut fairmq::Message, usize) -> HookResult<bool> + Send>>;

/// A device made of closures (unset hooks do nothing; `conditional_run` unset returns false).
#[derive(Default)]
pub struct Hooks {
    pub init_task: Hook<()>,
    pub pre_run: Hook<()>,
    pub conditional_run: Hook<bool>,
    pub run: Hook<()>,
    pub post_run: Hook<()>,
    pub reset_task: Hook<()>,
    pub reset: Hook<()>,
    pub handle_data: DataHook,
}

impl Device for Hooks {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.init_task.as_mut().map_or(Ok(()), |f| f(ctx))
    }
    fn pre_run(&mut self, ctx: &Context) -> HookResult {
        self.pre_run.as_mut().map_or(Ok(()), |f| f(ctx))
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        self.conditional_run.as_mut().map_or(Ok(false), |f| f(ctx))
    }
    fn run(&mut self, ctx: &Context) -> HookResult {
        self.run.as_mut().map_or(Ok(()), |f| f(ctx))
    }
    fn post_run(&mut self, ctx: &Context) -> HookResult {
        self.post_run.as_mut().map_or(Ok(()), |f| f(ctx))
    }
    fn reset_task(&mut self, ctx: &Context) -> HookResult {
        self.reset_task.as_mut().map_or(Ok(()), |f| f(ctx))
    }
    fn reset(&mut self, ctx: &Context) -> HookResult {
        self.reset.as_mut().map_or(Ok(()), |f| f(ctx))
    }
    fn handle_data(&mut self, ctx: &Context, ch: &str, m: &mut fairmq::Message, i: usize) -> HookResult<bool> {
        self.handle_data.as_mut().map_or(Ok(false), |f| f(ctx, ch, m, i))
    }
}

/// Arguments of a device with one channel, quiet logs, the given transport and session.
pub fn args(id: &str, transport: &str, s: &Session, channel: &str) -> String {
    format!(
        "--id {id} --severity warn --transport {transport} --session {} --shm-segment-size 20000000 --channel-config {channel},rateLogging=0",
        s.name
    )
}

impl Running {
    /// READY -> IDLE (for a new init cycle).
    pub fn ready_to_idle(&self) {
        self.go(Transition::ResetTask, State::DeviceReady);
        self.go(Transition::ResetDevice, State::Idle);
    }
}
pub mod guide;
pub mod process;
pub mod prometheus;

/// The end-of-data protocol of the guide's tests: every message starts with a tag byte (0 data,
/// 1 end), a sequence number and, in an end message, the number of data messages sent.
pub mod eod {
    pub fn data(seq: u64) -> Vec<u8> {
        let mut v = vec![0u8];
        v.extend_from_slice(&seq.to_le_bytes());
        v.extend_from_slice(&[7u8; 47]);
        v
    }
    pub fn end(count: u64) -> Vec<u8> {
        let mut v = vec![1u8];
        v.extend_from_slice(&u64::MAX.to_le_bytes());
        v.extend_from_slice(&count.to_le_bytes());
        v
    }
    /// (is end, seq or count).
    pub fn parse(b: &[u8]) -> (bool, u64) {
        let tag = b[0] == 1;
        let at = if tag { 9 } else { 1 };
        (tag, u64::from_le_bytes(b[at..at + 8].try_into().unwrap()))
    }
}
