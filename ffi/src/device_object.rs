//! Devices that a program holds and runs in a thread of its own choice: [`fmq_device`].
//!
//! This is FairMQ's `fair::mq::Device` used directly. One thread runs the state machine
//! ([`fmq_device_run`], FairMQ's `RunStateMachine()`). Other threads request transitions through
//! the device's state machine ([`fmq_device_states`], FairMQ's `ChangeState`). No controller runs
//! and nobody handles signals.
//!
//! The state machine exists from [`fmq_device_new`] on, so transitions can be requested before
//! the run starts. A device runs once.

use crate::config::fmq_config;
use crate::device::{fmq_device_hooks, CDevice};
use crate::error::*;
use crate::ptr::*;
use crate::states::fmq_states;
use fairmq::state_machine::StateMachine;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A device: its hooks, the `user` pointer they get, and its state machine. Thread-safe; its run
/// (`fmq_device_run`) happens once, in the thread that calls it.
#[allow(non_camel_case_types)]
pub struct fmq_device {
    hooks: fmq_device_hooks,
    user: *mut c_void,
    sm: Arc<StateMachine>,
    ran: AtomicBool,
}

// SAFETY: the hooks and the user pointer are used only by the thread that runs the device (the
// contract of fmq_device_new); everything else in the handle is thread-safe.
unsafe impl Send for fmq_device {}
// SAFETY: as above: shared use reaches only the state machine and the atomic flag.
unsafe impl Sync for fmq_device {}

/// A new device whose state is IDLE, into `*out` (freed with `fmq_device_free`). `hooks` is
/// copied; the hooks and `user` are used from the thread that calls `fmq_device_run` during its
/// call.
///
/// # Safety
/// `hooks` valid; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_device_new(
    hooks: *const fmq_device_hooks,
    user: *mut c_void,
    out: *mut *mut fmq_device,
) -> fmq_result {
    guard(|| {
        let r = (|| -> Result<fmq_result, fmq_result> {
            check_out(out)?;
            // SAFETY: contract as documented.
            let hooks = *unsafe { refp(hooks, "hooks") }?;
            fairmq::logging::init();
            let device = fmq_device { hooks, user, sm: StateMachine::new(), ran: AtomicBool::new(false) };
            // SAFETY: `out` checked above.
            unsafe { give(out, device) };
            Ok(FMQ_OK)
        })();
        code(r)
    })
}

/// The device's state machine (borrowed: valid until `fmq_device_free`): current state,
/// transitions, state subscriptions, from any thread.
///
/// # Safety
/// `dev` valid or NULL (then NULL is returned).
#[no_mangle]
pub unsafe extern "C" fn fmq_device_states(dev: *const fmq_device) -> *const fmq_states {
    guard_value(std::ptr::null(), || {
        // SAFETY: contract as documented; fmq_states is repr(transparent) over StateMachine, which
        // lives as long as the device.
        unsafe { refp(dev, "device") }.map_or(std::ptr::null(), |d| Arc::as_ptr(&d.sm).cast())
    })
}

/// Runs the device's state machine in this thread (FairMQ's `RunStateMachine`) with the
/// configuration `cfg` (shared: the device reads and sets its properties while it runs) until
/// EXITING (`FMQ_OK`) or ERROR (`FMQ_ERROR_STATE`, after the device went through ERROR).
/// Transitions come from other threads (`fmq_states_change`); nobody handles signals. A device
/// runs once: a second call is `FMQ_ERROR_STATE` at once.
///
/// # Safety
/// `dev` valid or NULL; `cfg` a valid handle or NULL; both stay valid during the call.
#[no_mangle]
pub unsafe extern "C" fn fmq_device_run(dev: *const fmq_device, cfg: *const fmq_config) -> fmq_result {
    guard(|| {
        let r = (|| -> Result<fmq_result, fmq_result> {
            // SAFETY: contract as documented.
            let (d, c) = unsafe { (refp(dev, "device")?, refp(cfg, "config")?) };
            if d.ran.swap(true, Ordering::AcqRel) {
                return Err(fail(FMQ_ERROR_STATE, "the device ran already (a device runs its state machine once)"));
            }
            // SAFETY: a valid handle, per the contract.
            let config = unsafe { crate::config_store::shared(c) };
            let mut device = CDevice { hooks: d.hooks, user: d.user };
            match fairmq::run_state_machine(&mut device, config, d.sm.clone()) {
                Ok(()) => Ok(FMQ_OK),
                Err(e) => Err(fail(FMQ_ERROR_STATE, format!("the device ended in ERROR ({e})"))),
            }
        })();
        code(r)
    })
}

/// Frees a device (NULL is fine). Not while it runs.
///
/// # Safety
/// `dev` NULL or from `fmq_device_new`, not running and not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn fmq_device_free(dev: *mut fmq_device) {
    guard_value((), || {
        // SAFETY: contract as documented.
        unsafe { take(dev) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::fmq_config;
    use crate::config_store::{fmq_config_free, fmq_config_new};
    use crate::device::fmq_context;
    use crate::states::{fmq_states_change, fmq_states_current};
    use fairmq::{State, Transition};
    use std::sync::atomic::AtomicU32;

    struct Counts {
        init: AtomicU32,
        run: AtomicU32,
    }

    unsafe extern "C-unwind" fn on_init(_: *const fmq_context, user: *mut c_void) -> i32 {
        // SAFETY: the test's Counts outlive the run.
        unsafe { &*user.cast::<Counts>() }.init.fetch_add(1, Ordering::SeqCst);
        0
    }

    unsafe extern "C-unwind" fn on_run(_: *const fmq_context, user: *mut c_void) -> i32 {
        // SAFETY: as in on_init.
        unsafe { &*user.cast::<Counts>() }.run.fetch_add(1, Ordering::SeqCst);
        0
    }

    /// Frees the test's handles, also when it fails.
    struct Handles(*mut fmq_device, *mut fmq_config);
    impl Drop for Handles {
        fn drop(&mut self) {
            // SAFETY: made by the test, freed once, after the run ended.
            unsafe {
                fmq_device_free(self.0);
                fmq_config_free(self.1);
            }
        }
    }

    fn change(s: *const fmq_states, t: Transition) -> bool {
        // SAFETY: a valid handle.
        unsafe { fmq_states_change(s, t as i32) }
    }

    fn wait_for(s: *const fmq_states, state: State) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // SAFETY: a valid handle.
        while unsafe { fmq_states_current(s) } != state as i32 {
            assert!(std::time::Instant::now() < deadline, "never reached {state}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn a_device_runs_in_the_callers_thread_driven_from_another_and_only_once() {
        let counts = Box::new(Counts { init: AtomicU32::new(0), run: AtomicU32::new(0) });
        let hooks = fmq_device_hooks { init: Some(on_init), run: Some(on_run), ..Default::default() };
        let (mut dev, mut cfg) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: valid arguments; `counts` outlives the device's run.
        unsafe {
            assert_eq!(fmq_device_new(&hooks, (&*counts as *const Counts).cast_mut().cast(), &mut dev), FMQ_OK);
            assert_eq!(fmq_config_new(true, &mut cfg), FMQ_OK);
        }
        let h = Handles(dev, cfg);
        // SAFETY: valid handle.
        let states = unsafe { fmq_device_states(h.0) };
        // SAFETY: as above.
        assert_eq!(unsafe { fmq_states_current(states) }, State::Idle as i32, "a state machine before the run");
        struct Raw(*mut fmq_device, *mut fmq_config);
        // SAFETY: both handles are thread-safe; the main thread frees them after the join.
        unsafe impl Send for Raw {}
        let raw = Raw(h.0, h.1);
        let runner = std::thread::spawn(move || {
            let raw = raw;
            // SAFETY: both valid until the main thread joins this one.
            unsafe { fmq_device_run(raw.0, raw.1) }
        });
        // One transition at a time: a request while one is pending is refused (as in FairMQ).
        assert!(change(states, Transition::InitDevice));
        wait_for(states, State::InitializingDevice);
        for (t, s) in [
            (Transition::CompleteInit, State::Initialized),
            (Transition::Bind, State::Bound),
            (Transition::Connect, State::DeviceReady),
            (Transition::InitTask, State::Ready),
        ] {
            assert!(change(states, t));
            wait_for(states, s);
        }
        assert!(change(states, Transition::Run));
        // Run returns at once, and the device goes back to READY by itself.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while counts.run.load(Ordering::SeqCst) == 0 {
            assert!(std::time::Instant::now() < deadline, "Run was never called");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        wait_for(states, State::Ready);
        for (t, s) in [(Transition::ResetTask, State::DeviceReady), (Transition::ResetDevice, State::Idle)] {
            assert!(change(states, t));
            wait_for(states, s);
        }
        assert!(change(states, Transition::End));
        assert_eq!(runner.join().unwrap(), FMQ_OK);
        assert_eq!(counts.init.load(Ordering::SeqCst), 1);
        assert_eq!(counts.run.load(Ordering::SeqCst), 1);
        // SAFETY: valid handles; the device ran already.
        assert_eq!(unsafe { fmq_device_run(h.0, h.1) }, FMQ_ERROR_STATE);
    }
}
