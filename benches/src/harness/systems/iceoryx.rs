//! iceoryx2 publish-subscribe (built with the `iceoryx2` feature): the zero-copy ceiling.
//!
//! Payload type `[u8]` with a maximum slice length of the cell's size; one sample per part, so a
//! multipart of N parts is N samples sent back to back (iceoryx2 has no multipart; one sample of
//! N x size would instead measure one big message, and 64 x 16 MiB would need a 1 GiB sample). The
//! receiver counts samples and the harness divides by N. Subscribers busy-poll, as iceoryx2's own
//! benchmark does; publishers retry until delivered (no sample is lost to overflow), so the receiver
//! paces the sender as a ZeroMQ high-water mark does. A sample of length 0 is the end marker.
//!
//! Every file goes under the cell's scratch directory (iceoryx2's root path) and every
//! shared-memory object's name starts with the run's prefix, so the harness removes exactly ours.

use super::super::options::{Mode, RoleArgs};
use super::super::workload::{self, Latency, Tally};
use iceoryx2::port::publisher::Publisher;
use iceoryx2::port::subscriber::Subscriber;
use iceoryx2::prelude::*;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;
type Service = ipc::Service;

fn node(a: &RoleArgs) -> Res<Node<Service>> {
    // Errors only: it warns that no config file was loaded, which is intended (we pass our own).
    set_log_level(LogLevel::Error);
    let mut config = Config::default();
    config.global.prefix = FileName::new(a.prefix.as_bytes())?;
    let root = a.scratch.join("iceoryx2");
    config.global.set_root_path(&Path::new(root.to_str().ok_or("scratch path is not UTF-8")?.as_bytes())?);
    Ok(NodeBuilder::new().config(&config).create::<Service>()?)
}

/// Samples a subscriber may queue: about 128 MiB (ZeroMQ's side gets the same budget), 2 to 1024.
fn buffer(size: usize) -> usize {
    ((128usize << 20) / size.max(1)).clamp(2, 1024)
}

/// The service both sides open (or create) with the same settings: iceoryx2 refuses to open a
/// service whose settings differ from its creator's.
fn service(
    node: &Node<Service>,
    name: &str,
    size: usize,
    publishers: usize,
) -> Res<iceoryx2::service::port_factory::publish_subscribe::PortFactory<Service, [u8], ()>> {
    Ok(node
        .service_builder(&ServiceName::new(name)?)
        .publish_subscribe::<[u8]>()
        .max_publishers(publishers)
        .max_subscribers(1)
        .history_size(0)
        .subscriber_max_buffer_size(buffer(size))
        .enable_safe_overflow(false)
        .open_or_create()?)
}

fn publisher(
    s: &iceoryx2::service::port_factory::publish_subscribe::PortFactory<Service, [u8], ()>,
    size: usize,
) -> Res<Publisher<Service, [u8], ()>> {
    Ok(s.publisher_builder()
        .initial_max_slice_len(size)
        .backpressure_strategy(BackpressureStrategy::RetryUntilDelivered)
        .create()?)
}

/// Waits until the service has a subscriber: samples published before it exists are not kept
/// (history 0), and the end marker must arrive.
fn await_subscriber(s: &iceoryx2::service::port_factory::publish_subscribe::PortFactory<Service, [u8], ()>) -> Res<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.dynamic_config().number_of_subscribers() == 0 {
        if Instant::now() > deadline {
            return Err("no iceoryx2 subscriber appeared within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Publishes one sample of `size` bytes: written in `touch` mode, sent as loaned otherwise.
fn publish(p: &Publisher<Service, [u8], ()>, mode: Mode, size: usize, seq: u64) {
    let sample = p.loan_slice_uninit(size).expect("loan");
    let sample = match mode {
        Mode::Touch => {
            let b = workload::fill_byte(seq);
            sample.write_from_fn(|_| b)
        }
        // SAFETY: the slice lies in the publisher's shared-memory data segment, a mapping of a file
        // that the kernel zero-filled and earlier samples only ever wrote initialised bytes to, so
        // every byte is initialised; FairMQ's mode sends it unwritten, as iceoryx2's own benchmark
        // does (`loan_slice_uninit(..).assume_init()`).
        Mode::Fairmq => unsafe { sample.assume_init() },
    };
    sample.send().expect("send");
}

/// Busy-polls (spin, then yield) for the next sample; returns its length (after reading it in `touch` mode).
fn take(sub: &Subscriber<Service, [u8], ()>, mode: Mode) -> usize {
    let mut spin = workload::Spin::default();
    loop {
        if let Some(sample) = sub.receive().expect("receive") {
            workload::read(mode, sample.payload());
            return sample.payload().len();
        }
        spin.wait();
    }
}

/// Receives samples until every sender's end marker; counts samples (the harness divides by parts).
pub fn receiver(a: &RoleArgs) -> Res<Tally> {
    let node = node(a)?;
    let svc = service(&node, &a.address, a.size, a.senders)?;
    let sub = svc.subscriber_builder().create()?;
    workload::announce_ready();
    Ok(workload::receive_until_end(a.senders, a.warmup(), || take(&sub, a.mode)))
}

/// Publishes `parts` samples per multipart for `seconds`, then an empty sample.
pub fn sender(a: &RoleArgs) -> Res<()> {
    let node = node(a)?;
    let svc = service(&node, &a.address, a.size, a.senders)?;
    let p = publisher(&svc, a.size)?;
    await_subscriber(&svc)?;
    let (mode, size, parts) = (a.mode, a.size, a.parts);
    workload::send_for(a.send_duration(), size * parts, |seq| {
        for _ in 0..parts {
            publish(&p, mode, size, seq);
        }
    });
    p.loan_slice_uninit(0)?.write_from_fn(|_| 0).send()?;
    workload::wait_for_stdin_close();
    Ok(())
}

/// Answers each sample on `<address>/ping` with one on `<address>/pong` until an empty one arrives.
pub fn pong(a: &RoleArgs) -> Res<()> {
    let node = node(a)?;
    let ping = service(&node, &format!("{}/ping", a.address), a.size, 1)?;
    let pong = service(&node, &format!("{}/pong", a.address), a.size, 1)?;
    let sub = ping.subscriber_builder().create()?;
    let p = publisher(&pong, a.size)?;
    workload::announce_ready();
    let mut seq = 0;
    while take(&sub, a.mode) != 0 {
        publish(&p, a.mode, a.size, seq);
        seq += 1;
    }
    Ok(())
}

/// Times round trips over the two services, busy polling for the answer.
pub fn ping(a: &RoleArgs) -> Res<Latency> {
    let node = node(a)?;
    let ping = service(&node, &format!("{}/ping", a.address), a.size, 1)?;
    let pong = service(&node, &format!("{}/pong", a.address), a.size, 1)?;
    let sub = pong.subscriber_builder().create()?;
    let p = publisher(&ping, a.size)?;
    await_subscriber(&ping)?;
    await_subscriber(&pong)?;
    let lat = workload::ping_for(a.warmup(), a.duration(), |seq| {
        publish(&p, a.mode, a.size, seq);
        take(&sub, a.mode);
    });
    p.loan_slice_uninit(0)?.write_from_fn(|_| 0).send()?;
    // Stay until pong took the end marker and left, so the sample is not lost with our publisher.
    let deadline = Instant::now() + Duration::from_secs(5);
    while ping.dynamic_config().number_of_subscribers() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(lat)
}
