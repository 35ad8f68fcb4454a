//! A device's state machine for C and C++: [`fmq_states`] (FairMQ's state API on
//! `fair::mq::Device`).
//!
//! A hook gets the state machine of the device that runs it ([`fmq_context_states`]). A program
//! gets the state machine of a device it holds with `fmq_device_states`. Through either handle, any
//! thread may:
//!
//! - read the current state ([`fmq_states_current`]);
//! - request a transition ([`fmq_states_change`]);
//! - learn whether a transition is pending ([`fmq_states_new_state_pending`]);
//! - subscribe to state changes ([`fmq_states_subscribe`]).
//!
//! States and transitions are FairMQ's numbers (`fair::mq::State`, `fair::mq::Transition`).

use crate::device::fmq_context;
use crate::error::*;
use crate::ptr::*;
use fairmq::state_machine::StateMachine;
use fairmq::{State, Transition};
use std::ffi::{c_char, c_void};

/// A device's state machine, borrowed: from a context, valid until `fmq_run_device` returns; from
/// `fmq_device_states`, until `fmq_device_free`. Thread-safe.
#[allow(non_camel_case_types)]
#[repr(transparent)]
pub struct fmq_states(StateMachine);

/// Called for every state the device enters (before the state's work), on the thread that runs
/// the state machine, with the state's number and the subscriber's `user`. Must not throw (C++).
#[allow(non_camel_case_types)]
pub type fmq_state_callback = Option<unsafe extern "C-unwind" fn(state: i32, user: *mut c_void)>;

/// The running device's state machine (see `fmq_states`); NULL for a NULL context.
///
/// # Safety
/// `ctx` is a valid context or NULL.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_states(ctx: *const fmq_context) -> *const fmq_states {
    guard_value(std::ptr::null(), || {
        // SAFETY: contract as documented; fmq_states is repr(transparent) over StateMachine, which
        // the device keeps in an Arc for the whole run.
        unsafe { refp(ctx, "context") }.map_or(std::ptr::null(), |c| std::sync::Arc::as_ptr(c.0.state_machine()).cast())
    })
}

/// The current state's number; -1 for a NULL handle.
///
/// # Safety
/// `s` is a valid handle or NULL.
#[no_mangle]
pub unsafe extern "C" fn fmq_states_current(s: *const fmq_states) -> i32 {
    guard_value(-1, || {
        // SAFETY: contract as documented.
        unsafe { refp(s, "states") }.map_or(-1, |s| s.0.current_state() as i32)
    })
}

/// Requests transition `transition` (FairMQ's number); whether the current state accepts it.
///
/// # Safety
/// `s` is a valid handle or NULL.
#[no_mangle]
pub unsafe extern "C" fn fmq_states_change(s: *const fmq_states, transition: i32) -> bool {
    guard_value(false, || {
        // SAFETY: contract as documented.
        let Ok(s) = (unsafe { refp(s, "states") }) else { return false };
        match Transition::ALL.iter().find(|t| **t as i32 == transition) {
            Some(t) => s.0.change_state(*t),
            None => {
                fail(FMQ_ERROR_INVALID, format!("no transition {transition}"));
                false
            }
        }
    })
}

/// Whether a transition is pending (work in the current state should end).
///
/// # Safety
/// `s` is a valid handle or NULL.
#[no_mangle]
pub unsafe extern "C" fn fmq_states_new_state_pending(s: *const fmq_states) -> bool {
    guard_value(false, || {
        // SAFETY: contract as documented.
        unsafe { refp(s, "states") }.is_ok_and(|s| s.0.new_state_pending())
    })
}

/// A `user` pointer that crosses threads: the subscriber promises it may (see
/// `fmq_states_subscribe`).
struct User(*mut c_void);
// SAFETY: the subscriber's contract: `user` may be used from the state machine's thread.
unsafe impl Send for User {}
// SAFETY: as above; the callback gets the pointer, never a reference through it.
unsafe impl Sync for User {}

/// Calls `callback(state, user)` for every state entered from now on, under `key` (a second
/// subscription with the same key adds another); see `fmq_state_callback`.
///
/// # Safety
/// `s` valid or NULL; `key` NUL-terminated; `user` may be used from the state machine's thread
/// until the run ends (also after `fmq_states_unsubscribe`: see there).
#[no_mangle]
pub unsafe extern "C" fn fmq_states_subscribe(
    s: *const fmq_states,
    key: *const c_char,
    callback: fmq_state_callback,
    user: *mut c_void,
) -> fmq_result {
    guard(|| {
        // SAFETY: contract as documented.
        let (s, key) = match unsafe { (refp(s, "states"), str_arg(key)) } {
            (Ok(s), Ok(k)) => (s, k),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        let Some(f) = callback else { return fail(FMQ_ERROR_NULL, "callback is NULL") };
        let user = User(user);
        s.0.subscribe_to_state_change(key, move |state: State| {
            let u = &user;
            // SAFETY: the callback's contract; a C++ exception must not cross it.
            unsafe { f(state as i32, u.0) }
        });
        FMQ_OK
    })
}

/// Ends the subscriptions of `key`. The state machine calls its subscribers from a copy of their
/// list: when it was notifying already (on its thread, while this is called from another), a
/// callback of `key` may still start after this returns. Keep `user` valid until the run ends.
///
/// # Safety
/// `s` valid or NULL; `key` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn fmq_states_unsubscribe(s: *const fmq_states, key: *const c_char) -> fmq_result {
    guard(|| {
        // SAFETY: contract as documented.
        match unsafe { (refp(s, "states"), str_arg(key)) } {
            (Ok(s), Ok(k)) => {
                s.0.unsubscribe_from_state_change(k);
                FMQ_OK
            }
            (Err(e), _) | (_, Err(e)) => e,
        }
    })
}
