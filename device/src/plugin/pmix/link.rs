//! A device's side of the command link to a `fairmq-pmix-command` process of the job: it says
//! hello, reports every state the device enters, and requests the transitions it is sent
//! (`change-state <TRANSITION>`), as the device's controller. Plain text frames over a ZeroMQ
//! DEALER connected to the command's ROUTER, whose address and secret (the hello shows it) came
//! with the first fence.

use crate::plugin::PluginServices;
use crate::state::{State, Transition};
use fairmq_zmq::{Message, SocketType, Transport};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

/// Runs the link until the device is EXITING or in ERROR, or until `stop` is set. Releases
/// control of the device at the end.
pub(super) fn run(
    services: &PluginServices,
    command: (&str, &str),
    rank: u32,
    states: &Receiver<State>,
    stop: &AtomicBool,
) {
    if let Err(e) = serve(services, command, rank, states, stop) {
        log::error!("pmix: the command link failed: {e}");
    }
    services.release_device_control();
}

fn serve(
    services: &PluginServices,
    (address, token): (&str, &str),
    rank: u32,
    states: &Receiver<State>,
    stop: &AtomicBool,
) -> Result<(), crate::BoxError> {
    // The socket's name is its routing id. The command's ROUTER needs the id to be unique. No
    // process outside the job may guess the id: a process that connected first under it would
    // have this link refused. So the name holds the rank and the job's secret.
    let transport = Transport::new(&format!("pmix-link-{rank}"))?;
    let socket = super::control_socket(&transport, SocketType::Dealer, &format!("rank-{rank}-{token}"))?;
    socket.connect(address)?;
    let send = |text: String| -> Result<(), crate::BoxError> {
        socket.send(&mut Message::from_slice(text.as_bytes()), 10_000)?;
        Ok(())
    };
    send(format!("hello\t{rank}\t{}\t{token}", services.current_state()))?;
    while !stop.load(Ordering::SeqCst) {
        while let Ok(s) = states.try_recv() {
            send(format!("state\t{s}"))?;
            if matches!(s, State::Exiting | State::Error) {
                return Ok(());
            }
        }
        let mut m = Message::new();
        if socket.receive(&mut m, 50).is_err() {
            continue; // nothing within 50 ms (or interrupted): report states, look again
        }
        let text = String::from_utf8_lossy(m.data()).into_owned();
        match text.strip_prefix("change-state ").map(str::parse::<Transition>) {
            Some(Ok(t)) => match services.change_state(t) {
                Ok(true) => {}
                Ok(false) => log::warn!("pmix: transition {t} refused in {}", services.current_state()),
                Err(e) => log::error!("pmix: {e}"),
            },
            Some(Err(e)) => log::error!("pmix: {e}"),
            None => log::error!("pmix: unknown command '{text}'"),
        }
    }
    Ok(())
}

/// A shared stop flag for the link thread.
pub(super) type StopFlag = Arc<AtomicBool>;
