//! The benchmark sampler's `--same-msg` on shmem: every message it sends is a copy sharing one
//! block (nothing allocated per message); without it every message has a block of its own.

mod common;
use common::*;
use fairmq::devices::BenchmarkSampler;
use fairmq::options::OptionGroup;
use fairmq::{config_from_args, State, Transition};
use fairmq_zmq::{AttachOptions, Method, SocketType};
use std::collections::HashSet;

const MESSAGES: usize = 10;

/// Runs a sampler (`max-iterations` 9: ten messages) into a receiver that keeps every message;
/// returns the distinct data addresses and sizes seen.
fn blocks_received(same_msg: bool) -> (usize, Vec<usize>) {
    let s = Session::new();
    let mut c = fairmq_shm::ShmConfig::new("receiver", &s.name);
    c.segment_size = 20_000_000;
    let receiver = fairmq_shm::Transport::new(&c).unwrap();
    let pull = receiver.socket(SocketType::Pull, "in").unwrap();
    let address = s.ipc("data");
    pull.attach(&address, &AttachOptions::new(Some(Method::Bind))).unwrap();

    let mut options = OptionGroup::new("bsampler");
    BenchmarkSampler::options(&mut options);
    let spec = format!("name=data,type=push,method=connect,address={address}");
    let line =
        format!("{} --max-iterations 9 --msg-size 4096 --same-msg {same_msg}", args("bsampler1", "shmem", &s, &spec));
    let words: Vec<&str> = line.split_whitespace().collect();
    let sampler = spawn(BenchmarkSampler::default(), config_from_args(&words, vec![options]).unwrap());
    sampler.to_ready();
    sampler.go(Transition::Run, State::Running);

    let mut held = Vec::new();
    for _ in 0..MESSAGES {
        let mut m = receiver.new_message();
        pull.receive(&mut m, 10_000).expect("the sampler's messages arrive");
        held.push(m);
    }
    assert!(sampler.h.wait_for_state(State::Ready, T).unwrap(), "the sampler ends after ten messages");
    sampler.ready_to_exit();
    assert!(sampler.join());
    let distinct: HashSet<usize> = held.iter().map(|m| m.data().as_ptr() as usize).collect();
    (distinct.len(), held.iter().map(|m| m.size()).collect())
}

#[test]
fn same_msg_sends_copies_of_one_block_on_shmem() {
    let (distinct, sizes) = blocks_received(true);
    assert_eq!(sizes, vec![4096; MESSAGES]);
    assert_eq!(distinct, 1, "all ten messages are the one block");
}

#[test]
fn without_same_msg_every_message_has_its_own_block() {
    let (distinct, sizes) = blocks_received(false);
    assert_eq!(sizes, vec![4096; MESSAGES]);
    assert_eq!(distinct, MESSAGES, "ten blocks, held at once");
}
