//! The systems under test, one module each, and the dispatch of a child process's role to them.
//!
//! Each module has the same four functions (`receiver`, `sender`, `pong`, `ping`) built on the shared
//! loops of [`workload`](super::workload), so the systems differ only in how a message moves;
//! fairmq-shm and fairmq-zmq have a `forwarder` too, the middle of a three-process chain.

mod bare_zmq;
mod fmq_zmq;
#[cfg(feature = "iceoryx2")]
mod iceoryx;
mod shm;

use super::options::{Role, RoleArgs, System};
use super::workload::{Latency, Tally};

/// Whether this build can run `system` (iceoryx2 needs the `iceoryx2` feature).
pub fn built(system: System) -> bool {
    system != System::Iceoryx2 || cfg!(feature = "iceoryx2")
}

/// What the harness prints in place of a system this build cannot run.
pub const ICEORYX2_MISSING: &str = "iceoryx2: not built (use --features iceoryx2)";

/// Runs one child process's role and prints its result line (see [`super::spawn`] for the protocol).
pub fn run_role(a: &RoleArgs) -> Result<(), Box<dyn std::error::Error>> {
    match a.role {
        Role::Receiver => {
            let t = receiver(a)?;
            println!("result {} {}", t.units, t.seconds);
        }
        Role::Sender => sender(a)?,
        Role::Pong => pong(a)?,
        Role::Ping => {
            let l = ping(a)?;
            println!("result {} {} {}", l.median_ns, l.p99_ns, l.count);
        }
        Role::Forwarder => match a.system {
            System::Shm => shm::forwarder(a)?,
            System::FmqZmq => fmq_zmq::forwarder(a)?,
            _ => {
                return Err(format!(
                    "{}: no forwarder (chains are measured on fairmq-shm and fairmq-zmq)",
                    a.system.name()
                )
                .into())
            }
        },
    }
    Ok(())
}

fn receiver(a: &RoleArgs) -> Result<Tally, Box<dyn std::error::Error>> {
    match a.system {
        System::Shm => shm::receiver(a),
        System::FmqZmq => fmq_zmq::receiver(a),
        System::BareZmq => bare_zmq::receiver(a),
        #[cfg(feature = "iceoryx2")]
        System::Iceoryx2 => iceoryx::receiver(a),
        #[cfg(not(feature = "iceoryx2"))]
        System::Iceoryx2 => Err(ICEORYX2_MISSING.into()),
    }
}

fn sender(a: &RoleArgs) -> Result<(), Box<dyn std::error::Error>> {
    match a.system {
        System::Shm => shm::sender(a),
        System::FmqZmq => fmq_zmq::sender(a),
        System::BareZmq => bare_zmq::sender(a),
        #[cfg(feature = "iceoryx2")]
        System::Iceoryx2 => iceoryx::sender(a),
        #[cfg(not(feature = "iceoryx2"))]
        System::Iceoryx2 => Err(ICEORYX2_MISSING.into()),
    }
}

fn pong(a: &RoleArgs) -> Result<(), Box<dyn std::error::Error>> {
    match a.system {
        System::Shm => shm::pong(a),
        System::FmqZmq => fmq_zmq::pong(a),
        System::BareZmq => bare_zmq::pong(a),
        #[cfg(feature = "iceoryx2")]
        System::Iceoryx2 => iceoryx::pong(a),
        #[cfg(not(feature = "iceoryx2"))]
        System::Iceoryx2 => Err(ICEORYX2_MISSING.into()),
    }
}

fn ping(a: &RoleArgs) -> Result<Latency, Box<dyn std::error::Error>> {
    match a.system {
        System::Shm => shm::ping(a),
        System::FmqZmq => fmq_zmq::ping(a),
        System::BareZmq => bare_zmq::ping(a),
        #[cfg(feature = "iceoryx2")]
        System::Iceoryx2 => iceoryx::ping(a),
        #[cfg(not(feature = "iceoryx2"))]
        System::Iceoryx2 => Err(ICEORYX2_MISSING.into()),
    }
}
