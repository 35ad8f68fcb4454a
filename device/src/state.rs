//! Device states ([`State`]) and transitions ([`Transition`]), with FairMQ's names and legal edges.
//!
//! [`State::next`] tells where a transition leads from a state, or that the transition is not
//! legal there. In a *working* state ([`State::is_working`]), the device's thread runs a hook. In
//! the other states, the device waits for a request. Both types print and parse FairMQ's names:
//! [`State::DeviceReady`] is `DEVICE READY`, and a name that matches none is an [`UnknownName`].

use std::fmt;
use std::str::FromStr;

/// A device state (FairMQ's `fair::mq::State`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum State {
    /// No state yet (before the state machine started).
    Undefined = 0,
    /// FairMQ's `OK`. It is the state machine's own state, and devices never enter it.
    Ok = 1,
    /// Something failed, and the device stops (`ERROR`).
    Error = 2,
    /// Started, nothing configured (`IDLE`).
    Idle = 3,
    /// Reading the configuration (`INITIALIZING DEVICE`). The transition `CompleteInit` ends it.
    InitializingDevice = 4,
    /// Configured, channels not yet attached (`INITIALIZED`).
    Initialized = 5,
    /// Binding the channels that bind (`BINDING`).
    Binding = 6,
    /// Bound (`BOUND`).
    Bound = 7,
    /// Connecting the channels that connect (`CONNECTING`).
    Connecting = 8,
    /// Every channel attached (`DEVICE READY`).
    DeviceReady = 9,
    /// Running the `InitTask` hook (`INITIALIZING TASK`).
    InitializingTask = 10,
    /// Ready to run (`READY`).
    Ready = 11,
    /// Running: `Run` or the data callbacks (`RUNNING`).
    Running = 12,
    /// Running the `ResetTask` hook (`RESETTING TASK`).
    ResettingTask = 13,
    /// Closing the channels (`RESETTING DEVICE`).
    ResettingDevice = 14,
    /// Leaving for good (`EXITING`).
    Exiting = 15,
}

/// A transition (FairMQ's `fair::mq::Transition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Transition {
    /// Moves a working state on to the next state by itself. BINDING, CONNECTING,
    /// INITIALIZING TASK, RESETTING TASK and RESETTING DEVICE end this way.
    Auto = 0,
    /// IDLE to INITIALIZING DEVICE.
    InitDevice = 1,
    /// INITIALIZING DEVICE to INITIALIZED.
    CompleteInit = 2,
    /// INITIALIZED to BINDING (then BOUND).
    Bind = 3,
    /// BOUND to CONNECTING (then DEVICE READY).
    Connect = 4,
    /// DEVICE READY to INITIALIZING TASK (then READY).
    InitTask = 5,
    /// READY to RUNNING.
    Run = 6,
    /// RUNNING to READY.
    Stop = 7,
    /// READY to RESETTING TASK (then DEVICE READY).
    ResetTask = 8,
    /// INITIALIZED, BOUND or DEVICE READY to RESETTING DEVICE (then IDLE).
    ResetDevice = 9,
    /// IDLE to EXITING.
    End = 10,
    /// Any state but ERROR itself to ERROR.
    ErrorFound = 11,
}

impl State {
    /// Every state.
    pub const ALL: [State; 16] = [
        State::Undefined,
        State::Ok,
        State::Error,
        State::Idle,
        State::InitializingDevice,
        State::Initialized,
        State::Binding,
        State::Bound,
        State::Connecting,
        State::DeviceReady,
        State::InitializingTask,
        State::Ready,
        State::Running,
        State::ResettingTask,
        State::ResettingDevice,
        State::Exiting,
    ];

    /// The printed name (`"DEVICE READY"`), as in logs and `GetCurrentStateName()`.
    pub fn name(self) -> &'static str {
        match self {
            State::Undefined => "UNDEFINED",
            State::Ok => "OK",
            State::Error => "ERROR",
            State::Idle => "IDLE",
            State::InitializingDevice => "INITIALIZING DEVICE",
            State::Initialized => "INITIALIZED",
            State::Binding => "BINDING",
            State::Bound => "BOUND",
            State::Connecting => "CONNECTING",
            State::DeviceReady => "DEVICE READY",
            State::InitializingTask => "INITIALIZING TASK",
            State::Ready => "READY",
            State::Running => "RUNNING",
            State::ResettingTask => "RESETTING TASK",
            State::ResettingDevice => "RESETTING DEVICE",
            State::Exiting => "EXITING",
        }
    }

    /// The state machine's internal name (`"DEVICE_READY"`), used in "No transition" logs.
    pub fn fsm_name(self) -> String {
        self.name().replace(' ', "_")
    }

    /// The state that transition `t` leads to from this state, or `None` if there is no such
    /// edge. `ErrorFound` is accepted in every state but `ERROR`. `ERROR` is terminal: no
    /// transition leaves it.
    pub fn next(self, t: Transition) -> Option<State> {
        use State::*;
        use Transition as T;
        Some(match (self, t) {
            (Error, _) => return None,
            (_, T::ErrorFound) => Error,
            (Binding, T::Auto) => Bound,
            (Connecting, T::Auto) => DeviceReady,
            (InitializingTask, T::Auto) => Ready,
            (ResettingTask, T::Auto) => DeviceReady,
            (ResettingDevice, T::Auto) => Idle,
            (Idle, T::InitDevice) => InitializingDevice,
            (InitializingDevice, T::CompleteInit) => Initialized,
            (Initialized, T::Bind) => Binding,
            (Bound, T::Connect) => Connecting,
            (DeviceReady, T::InitTask) => InitializingTask,
            (Ready, T::Run) => Running,
            (Running, T::Stop) => Ready,
            (Ready, T::ResetTask) => ResettingTask,
            (Initialized | Bound | DeviceReady, T::ResetDevice) => ResettingDevice,
            (Idle, T::End) => Exiting,
            _ => return None,
        })
    }

    /// Whether the device works in this state (a hook runs), rather than waiting for a request.
    pub fn is_working(self) -> bool {
        matches!(
            self,
            State::InitializingDevice
                | State::Binding
                | State::Connecting
                | State::InitializingTask
                | State::Running
                | State::ResettingTask
                | State::ResettingDevice
        )
    }
}

impl Transition {
    /// Every transition.
    pub const ALL: [Transition; 12] = [
        Transition::Auto,
        Transition::InitDevice,
        Transition::CompleteInit,
        Transition::Bind,
        Transition::Connect,
        Transition::InitTask,
        Transition::Run,
        Transition::Stop,
        Transition::ResetTask,
        Transition::ResetDevice,
        Transition::End,
        Transition::ErrorFound,
    ];

    /// The printed name (`"INIT DEVICE"`).
    pub fn name(self) -> &'static str {
        match self {
            Transition::Auto => "AUTO",
            Transition::InitDevice => "INIT DEVICE",
            Transition::CompleteInit => "COMPLETE INIT",
            Transition::Bind => "BIND",
            Transition::Connect => "CONNECT",
            Transition::InitTask => "INIT TASK",
            Transition::Run => "RUN",
            Transition::Stop => "STOP",
            Transition::ResetTask => "RESET TASK",
            Transition::ResetDevice => "RESET DEVICE",
            Transition::End => "END",
            Transition::ErrorFound => "ERROR FOUND",
        }
    }

    /// The state machine's internal name (`"INIT_DEVICE"`).
    pub fn fsm_name(self) -> String {
        self.name().replace(' ', "_")
    }
}

/// An unknown state or transition name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} name: '{name}'")]
pub struct UnknownName {
    /// "state" or "transition".
    pub kind: &'static str,
    /// The name given.
    pub name: String,
}

impl FromStr for State {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<State, UnknownName> {
        State::ALL.into_iter().find(|st| st.name() == s).ok_or(UnknownName { kind: "state", name: s.to_owned() })
    }
}

impl FromStr for Transition {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Transition, UnknownName> {
        Transition::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or(UnknownName { kind: "transition", name: s.to_owned() })
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in State::ALL {
            assert_eq!(s.name().parse::<State>().unwrap(), s);
        }
        for t in Transition::ALL {
            assert_eq!(t.name().parse::<Transition>().unwrap(), t);
        }
        assert!("READY ".parse::<State>().is_err());
        assert_eq!(State::DeviceReady.fsm_name(), "DEVICE_READY");
        assert_eq!(Transition::InitDevice.fsm_name(), "INIT_DEVICE");
    }

    #[test]
    fn every_edge_of_fairmq_and_no_other() {
        use State::*;
        use Transition as T;
        let legal = [
            (Idle, T::InitDevice, InitializingDevice),
            (InitializingDevice, T::CompleteInit, Initialized),
            (Initialized, T::Bind, Binding),
            (Binding, T::Auto, Bound),
            (Bound, T::Connect, Connecting),
            (Connecting, T::Auto, DeviceReady),
            (DeviceReady, T::InitTask, InitializingTask),
            (InitializingTask, T::Auto, Ready),
            (Ready, T::Run, Running),
            (Running, T::Stop, Ready),
            (Ready, T::ResetTask, ResettingTask),
            (ResettingTask, T::Auto, DeviceReady),
            (Initialized, T::ResetDevice, ResettingDevice),
            (Bound, T::ResetDevice, ResettingDevice),
            (DeviceReady, T::ResetDevice, ResettingDevice),
            (ResettingDevice, T::Auto, Idle),
            (Idle, T::End, Exiting),
        ];
        for s in State::ALL {
            for t in Transition::ALL {
                let expected = if t == T::ErrorFound && s != Error {
                    Some(Error)
                } else {
                    legal.iter().find(|(a, b, _)| *a == s && *b == t).map(|e| e.2)
                };
                assert_eq!(s.next(t), expected, "{s} on {t}");
            }
        }
    }
}
