//! The state machine engine: [`StateMachine`], and the [`StateQueue`] that waiters read.
//!
//! Any thread may request a transition with [`StateMachine::change_state`]. The *state loop*,
//! [`StateMachine::run`], runs on the device's thread. It moves to the requested state and runs
//! that state's work. The module `state` defines the states and which transitions are legal.
//!
//! # How a transition happens
//!
//! As in FairMQ, an accepted transition does not change the state at once:
//!
//! 1. [`StateMachine::change_state`] marks the next state *pending*. While one transition is
//!    pending, the machine refuses every other request except `ErrorFound`. `ErrorFound` is
//!    accepted in every state but ERROR, even while another transition is pending.
//! 2. The same call runs the new-transition subscribers, in the requesting thread. The device
//!    interrupts its transports there, so that the current state's work ends soon.
//! 3. When the current state's work returns, the loop enters the pending state. It calls the
//!    state-change subscribers, records the state in the [`StateQueue`], and runs the state's work.
//!
//! The loop ends in EXITING, or in ERROR with [`ErrorState`]. A new-transition subscriber that
//! panics sends its transition to ERROR instead. A state-change subscriber that panics skips the
//! state's work and requests `ErrorFound`.

use crate::logging::state as log_state;
use crate::state::{State, Transition};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

type StateCallback = Arc<dyn Fn(State) + Send + Sync>;
type TransitionCallback = Arc<dyn Fn(Transition) + Send + Sync>;

struct Inner {
    state: State,
    next: State,
    pending: bool,
    state_subs: Vec<(String, i64, StateCallback)>,
    transition_subs: Vec<(String, TransitionCallback)>,
}

/// A device's state machine. `StateMachine::new` returns it in an `Arc`, which is cheap to share.
/// Every method may be called from any thread.
pub struct StateMachine {
    inner: Mutex<Inner>,
    changed: Condvar,
    pending: AtomicBool,
    shutdown: AtomicBool,
    current: AtomicI32,
    queue: StateQueue,
    /// What the metrics endpoint reads: the channels, the transports and the states entered. The
    /// interactive control's `[p]` prints the channels' peer counts from here too.
    telemetry: crate::telemetry::Telemetry,
}

impl std::fmt::Debug for StateMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateMachine").field("state", &self.current_state()).finish()
    }
}

impl Default for StateMachine {
    fn default() -> Self {
        StateMachine {
            inner: Mutex::new(Inner {
                state: State::Idle,
                next: State::Idle,
                pending: false,
                state_subs: Vec::new(),
                transition_subs: Vec::new(),
            }),
            changed: Condvar::new(),
            pending: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            current: AtomicI32::new(State::Idle as i32),
            queue: StateQueue::default(),
            telemetry: crate::telemetry::Telemetry::default(),
        }
    }
}

impl StateMachine {
    /// A state machine in `IDLE`.
    pub fn new() -> Arc<StateMachine> {
        Arc::new(StateMachine::default())
    }

    /// What the device publishes for its metrics endpoint.
    pub(crate) fn telemetry(&self) -> &crate::telemetry::Telemetry {
        &self.telemetry
    }

    /// Each channel (`name[index]`) and how many peers it has now.
    pub fn channel_peers(&self) -> Vec<(String, u64)> {
        let channels = self.telemetry.channels();
        channels.iter().map(|c| (format!("{}[{}]", c.name, c.index), c.peers.load(Ordering::Relaxed))).collect()
    }

    /// Requests a transition; returns whether it was accepted.
    pub fn change_state(&self, t: Transition) -> bool {
        let mut g = self.inner.lock();
        if g.pending && t != Transition::ErrorFound {
            log_state!("Transition {t} incoming, but another state transition is already ongoing.");
            return false;
        }
        // The request applies to the current state, because a pending state is not entered yet.
        // While a state is pending, only `ErrorFound` gets here, and `ErrorFound` is accepted in
        // every state but ERROR.
        let from = g.state;
        let Some(next) = from.next(t) else {
            if from != State::Error {
                log_state!("No transition from state {} on transition {}", from.fsm_name(), t.fsm_name());
            }
            return false;
        };
        g.next = next;
        let subs: Vec<(String, TransitionCallback)> = g.transition_subs.clone();
        for (key, cb) in subs {
            // A callback that panics sends this transition to ERROR, as `ErrorFound` would. FairMQ
            // does the same: an exception from a subscriber ends in ERROR.
            if let Err(p) = crate::panic_boundary::catch(|| cb(t)) {
                log::error!("new-transition callback '{key}' panicked on {t}: {p}");
                g.next = State::Error;
            }
        }
        g.pending = true;
        self.pending.store(true, Ordering::Release);
        self.changed.notify_all();
        true
    }

    /// Whether a transition is pending. If one is, the current state's work should end.
    #[inline]
    pub fn new_state_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Marks that the device is to shut down, for example because a signal arrived. Work that
    /// would otherwise go on until a timeout, such as retrying to connect, then ends at once. The
    /// controller still drives the states: `request_shutdown` only tells the working states not to
    /// wait for something that will not come.
    pub fn request_shutdown(&self) {
        self.shutdown.store(true, Ordering::Release);
    }

    /// Whether a shutdown was requested.
    #[inline]
    pub fn shutdown_requested(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// The flag that `request_shutdown` sets. Loops that take a stop flag, such as the startup
    /// sequence, read it.
    pub fn shutdown_flag(&self) -> &AtomicBool {
        &self.shutdown
    }

    /// The current state.
    pub fn current_state(&self) -> State {
        State::ALL[self.current.load(Ordering::Acquire) as usize]
    }

    /// Waits until a transition is pending, for at most `timeout` (`None` waits forever). Returns
    /// whether a transition is pending.
    pub fn wait_for_pending(&self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t)); // too far off: no deadline
        let mut g = self.inner.lock();
        while !g.pending {
            match deadline {
                None => self.changed.wait(&mut g),
                Some(d) => {
                    if self.changed.wait_until(&mut g, d).timed_out() {
                        return g.pending;
                    }
                }
            }
        }
        true
    }

    /// FairMQ's `WaitFor`: sleeps for `d`, but wakes early when a transition becomes pending.
    /// Returns true if the full time passed.
    pub fn wait_for(&self, d: Duration) -> bool {
        !self.wait_for_pending(Some(d))
    }

    /// Calls `cb` for every state that the loop enters, before the state's work. `key` names the
    /// subscription. The subscribers are called in ascending order of the number that their key
    /// starts with; a key without a number counts as 0. Subscribers with the same number are
    /// called in the order they subscribed.
    pub fn subscribe_to_state_change(&self, key: &str, cb: impl Fn(State) + Send + Sync + 'static) {
        let group = leading_number(key);
        let mut g = self.inner.lock();
        g.state_subs.push((key.to_owned(), group, Arc::new(cb)));
        g.state_subs.sort_by_key(|s| s.1);
    }

    /// Ends a state machine that will never run, for example because a plugin failed before the
    /// device started. The state becomes ERROR. The state-change subscribers and the waiters on the
    /// `StateQueue` learn of it, so their waits end.
    pub fn abandon(&self) {
        {
            let mut g = self.inner.lock();
            g.state = State::Error;
            g.next = State::Error;
            self.current.store(State::Error as i32, Ordering::Release);
        }
        let _ = self.notify_state(State::Error);
        self.queue.push(State::Error);
    }

    /// Removes every subscription of `key` (no-op if there is none).
    pub fn unsubscribe_from_state_change(&self, key: &str) {
        self.inner.lock().state_subs.retain(|s| s.0 != key);
    }

    /// Calls `cb` for every accepted transition, in the requesting thread.
    pub fn subscribe_to_new_transition(&self, key: &str, cb: impl Fn(Transition) + Send + Sync + 'static) {
        self.inner.lock().transition_subs.push((key.to_owned(), Arc::new(cb)));
    }

    /// Removes the new-transition subscription of `key`.
    pub fn unsubscribe_from_new_transition(&self, key: &str) {
        let mut g = self.inner.lock();
        if let Some(i) = g.transition_subs.iter().position(|s| s.0 == key) {
            g.transition_subs.remove(i);
        }
    }

    /// Calls the state-change subscribers. Returns false if one panicked: the panic is then logged,
    /// and `ErrorFound` is requested.
    fn notify_state(&self, s: State) -> bool {
        let subs: Vec<(String, StateCallback)> =
            self.inner.lock().state_subs.iter().map(|(k, _, cb)| (k.clone(), cb.clone())).collect();
        let mut ok = true;
        for (key, cb) in subs {
            if let Err(p) = crate::panic_boundary::catch(|| cb(s)) {
                log::error!("state-change callback '{key}' panicked entering {s}: {p}");
                ok = false;
            }
        }
        if !ok {
            self.change_state(Transition::ErrorFound);
        }
        ok
    }

    /// Runs the state loop in this thread until `EXITING` (`Ok`) or `ERROR` (`Err`). For each
    /// state, the loop does these steps in order:
    ///
    /// 1. It calls `prepare(state)`, in which the device resumes its transports. `prepare` runs
    ///    under the state lock, before the new state is published.
    /// 2. It calls the state-change subscribers.
    /// 3. It pushes the state onto the device's state queue.
    /// 4. It calls `work(state)`, which returns when the state's work is done.
    pub fn run(&self, mut prepare: impl FnMut(State), mut work: impl FnMut(State)) -> Result<(), ErrorState> {
        log_state!("Starting FairMQ state machine --> IDLE");
        self.telemetry.entered(State::Idle);
        let _ = self.notify_state(State::Idle);
        loop {
            let (old, new) = {
                let mut g = self.inner.lock();
                while !g.pending {
                    self.changed.wait(&mut g);
                }
                let old = g.state;
                g.state = g.next;
                g.pending = false;
                // `prepare` resumes the transports under the lock that `change_state` holds while
                // it interrupts them. So a transition requested once the new state is visible
                // interrupts after this resume, never before it. Otherwise the resume would undo
                // the interrupt of a `Stop` that came in between, and `post_run` would run with
                // the transports not interrupted.
                prepare(g.state);
                self.pending.store(false, Ordering::Release);
                self.current.store(g.state as i32, Ordering::Release);
                self.telemetry.entered(g.state);
                (old, g.state)
            };
            log_state!("{old} ---> {new}");
            // As in FairMQ, when a subscriber fails, the loop skips the state's work, and ERROR
            // comes next. The last states, ERROR and EXITING, are still queued (and worked),
            // because waiters must learn of them.
            if self.notify_state(new) || matches!(new, State::Error | State::Exiting) {
                self.queue.push(new);
                work(new);
            }
            match new {
                State::Exiting => {
                    log_state!("Exiting FairMQ state machine");
                    return Ok(());
                }
                State::Error => return Err(ErrorState),
                _ => {}
            }
        }
    }

    /// The device's own queue of the states entered, which `StateQueue::wait_for_state` reads.
    pub fn queue(&self) -> &StateQueue {
        &self.queue
    }
}

/// The device ended in `ERROR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("Device transitioned to error state")]
pub struct ErrorState;

/// The integer that a key starts with, read as C's `strtol` reads it, or 0 if there is none.
fn leading_number(key: &str) -> i64 {
    let (sign, rest) = match key.strip_prefix('-') {
        Some(r) => (-1, r),
        None => (1, key),
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse::<i64>().map_or(0, |n| sign * n)
}

/// States in the order they were entered, for waiting on them (FairMQ's `StateQueue`).
#[derive(Default)]
pub struct StateQueue {
    q: Mutex<VecDeque<State>>,
    cv: Condvar,
}

impl std::fmt::Debug for StateQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateQueue").field("len", &self.q.lock().len()).finish()
    }
}

impl StateQueue {
    /// Appends an entered state.
    pub fn push(&self, s: State) {
        self.q.lock().push_back(s);
        self.cv.notify_all();
    }

    /// Pops the next state, waiting for at most `timeout` (`None` waits forever). `ERROR` is never
    /// popped: it stays at the front, and this call and every later call return it as
    /// `Err(ErrorState)`.
    pub fn wait_for_next(&self, timeout: Option<Duration>) -> Result<Option<State>, ErrorState> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t)); // too far off: no deadline
        let mut q = self.q.lock();
        loop {
            match q.front().copied() {
                Some(State::Error) => return Err(ErrorState),
                Some(s) => {
                    q.pop_front();
                    return Ok(Some(s));
                }
                None => match deadline {
                    None => self.cv.wait(&mut q),
                    Some(d) => {
                        if self.cv.wait_until(&mut q, d).timed_out() && q.is_empty() {
                            return Ok(None);
                        }
                    }
                },
            }
        }
    }

    /// Pops states until it has popped `target`. Returns `Ok(false)` on timeout.
    pub fn wait_for_state(&self, target: State, timeout: Option<Duration>) -> Result<bool, ErrorState> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t)); // too far off: no deadline
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            match self.wait_for_next(left)? {
                Some(s) if s == target => return Ok(true),
                Some(_) => {}
                None => return Ok(false),
            }
        }
    }

    /// Forgets the queued states, but keeps a queued `ERROR`.
    pub fn clear(&self) {
        let mut q = self.q.lock();
        if q.front() != Some(&State::Error) {
            q.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn one_transition_pending_at_a_time_except_error_found() {
        let sm = StateMachine::new();
        assert!(!sm.change_state(Transition::Connect), "illegal edge");
        assert!(sm.change_state(Transition::InitDevice));
        assert!(sm.new_state_pending());
        assert!(!sm.change_state(Transition::End), "another is pending");
        assert!(sm.change_state(Transition::ErrorFound), "ErrorFound overrides");
    }

    #[test]
    fn loop_runs_states_and_subscribers_in_order() {
        let sm = StateMachine::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let interrupts = Arc::new(AtomicUsize::new(0));
        let (s2, i2) = (seen.clone(), interrupts.clone());
        sm.subscribe_to_state_change("10-late", {
            let s = seen.clone();
            move |st| s.lock().push(format!("late {st}"))
        });
        sm.subscribe_to_state_change("plugin", move |st| s2.lock().push(format!("sub {st}")));
        sm.subscribe_to_new_transition("device", move |_| {
            i2.fetch_add(1, Ordering::SeqCst);
        });
        let ctl = sm.clone();
        let controller = std::thread::spawn(move || {
            for (t, s) in
                [(Transition::InitDevice, State::InitializingDevice), (Transition::CompleteInit, State::Initialized)]
            {
                assert!(ctl.change_state(t));
                assert!(ctl.queue().wait_for_state(s, Some(Duration::from_secs(10))).unwrap());
            }
            assert!(ctl.change_state(Transition::ResetDevice));
            ctl.queue().wait_for_state(State::Idle, Some(Duration::from_secs(10))).unwrap();
            assert!(ctl.change_state(Transition::End));
        });
        let sm2 = sm.clone();
        let r = sm.run(
            |st| seen.lock().push(format!("prepare {st}")),
            |st| {
                seen.lock().push(format!("work {st}"));
                if st == State::ResettingDevice {
                    assert!(sm2.change_state(Transition::Auto));
                }
            },
        );
        controller.join().unwrap();
        assert_eq!(r, Ok(()));
        let seen = seen.lock().clone();
        assert_eq!(&seen[..2], ["sub IDLE", "late IDLE"], "subscribers in group order, initial IDLE");
        assert_eq!(
            &seen[2..6],
            [
                "prepare INITIALIZING DEVICE",
                "sub INITIALIZING DEVICE",
                "late INITIALIZING DEVICE",
                "work INITIALIZING DEVICE"
            ]
        );
        assert_eq!(seen.last().unwrap(), "work EXITING");
        assert_eq!(interrupts.load(Ordering::SeqCst), 5, "every accepted transition notified");
        assert_eq!(sm.current_state(), State::Exiting);
    }

    #[test]
    fn a_wait_too_long_for_a_deadline_waits_without_one() {
        let sm = StateMachine::new();
        assert!(sm.change_state(Transition::InitDevice));
        // `Instant + Duration::MAX` used to overflow and panic. Through the C ABI,
        // `fmq_context_wait_for(ctx, UINT64_MAX)` then returned false at once, on every call.
        assert!(sm.wait_for_pending(Some(Duration::MAX)));
        assert!(sm.wait_for_pending(Some(Duration::from_millis(u64::MAX))));
    }

    #[test]
    fn error_ends_the_loop_and_the_queue_reports_it() {
        let sm = StateMachine::new();
        assert!(sm.change_state(Transition::ErrorFound));
        assert_eq!(sm.run(|_| {}, |_| {}), Err(ErrorState));
        assert_eq!(sm.queue().wait_for_next(Some(Duration::ZERO)), Err(ErrorState));
        assert_eq!(sm.queue().wait_for_next(Some(Duration::ZERO)), Err(ErrorState), "ERROR stays");
        assert!(!sm.change_state(Transition::InitDevice), "nothing after ERROR");
    }

    #[test]
    fn i09_a_panicking_state_subscriber_skips_the_work_and_ends_in_error() {
        let sm = StateMachine::new();
        sm.subscribe_to_state_change("bad", |s| assert_ne!(s, State::InitializingDevice, "subscriber fails"));
        assert!(sm.change_state(Transition::InitDevice));
        let worked = Mutex::new(Vec::new());
        assert_eq!(sm.run(|_| {}, |s| worked.lock().push(s)), Err(ErrorState));
        assert_eq!(*worked.lock(), [State::Error], "no work for the state whose subscriber panicked");
    }

    #[test]
    fn i09_a_panicking_transition_subscriber_turns_the_transition_into_error_found() {
        let sm = StateMachine::new();
        sm.subscribe_to_new_transition("bad", |t| assert_ne!(t, Transition::InitDevice, "subscriber fails"));
        assert!(sm.change_state(Transition::InitDevice));
        assert_eq!(sm.run(|_| {}, |_| {}), Err(ErrorState));
        assert_eq!(sm.current_state(), State::Error);
    }

    #[test]
    fn wait_for_returns_early_when_a_transition_is_pending() {
        let sm = StateMachine::new();
        assert!(sm.wait_for(Duration::from_millis(20)), "full time passed");
        let s2 = sm.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            s2.change_state(Transition::InitDevice)
        });
        let start = Instant::now();
        assert!(!sm.wait_for(Duration::from_secs(30)));
        assert!(start.elapsed() < Duration::from_secs(20));
        assert!(t.join().unwrap());
    }
}
