//! A real topology end to end: a sampler process pushes N messages over ipc to a processor process,
//! which forwards them to a sink process; the sink checks every sequence number and reports rates.
//! The last message of the sampler is an end message carrying N, so nothing is lost at the end.
//!
//! `cargo run --release --example push_pull_processes [-- <messages> <size>]`

use fairmq_zmq::{AttachOptions, Message, Method, SocketType, Transport};
use std::process::{Command, ExitCode};
use std::time::Instant;

const END: u64 = u64::MAX;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--role") => match run_role(&args[2..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("[{}] error: {e}", args.get(2).map(String::as_str).unwrap_or("?"));
                ExitCode::FAILURE
            }
        },
        _ => orchestrate(&args[1..]),
    }
}

fn orchestrate(args: &[String]) -> ExitCode {
    let count: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let size: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1024);
    let dir = std::env::temp_dir().join(format!("fairmq-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let a = format!("ipc://{}/sampler", dir.display());
    let b = format!("ipc://{}/sink", dir.display());
    let me = std::env::current_exe().expect("own path");
    println!("quickstart: sampler -> processor -> sink, {count} messages of {size} B over ipc");
    let spawn =
        |role: &str, extra: &[&str]| Command::new(&me).arg("--role").arg(role).args(extra).spawn().expect("spawn");
    let (n, s) = (count.to_string(), size.to_string());
    let mut procs = [
        ("sink", spawn("sink", &[&b, &n])),
        ("processor", spawn("processor", &[&a, &b])),
        ("sampler", spawn("sampler", &[&a, &n, &s])),
    ];
    let mut ok = true;
    for (name, child) in procs.iter_mut() {
        let status = child.wait().expect("wait");
        println!("{name} exited with {status}");
        ok &= status.success();
    }
    let _ = std::fs::remove_dir_all(&dir);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run_role(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let role = args[0].as_str();
    let t = Transport::new(role)?;
    match role {
        "sampler" => {
            let (addr, count, size): (&str, u64, usize) = (&args[1], args[2].parse()?, args[3].parse()?);
            let out = t.socket(SocketType::Push, "data")?;
            out.set_linger(-1)?; // deliver everything before the process ends
            out.attach(addr, &AttachOptions::new(Some(Method::Bind)))?;
            for seq in 0..count {
                let mut m = Message::with_size(size.max(8));
                m.data_mut()[..8].copy_from_slice(&seq.to_le_bytes());
                out.send(&mut m, -1)?;
            }
            let mut end = Message::from_vec([END.to_le_bytes(), count.to_le_bytes()].concat());
            out.send(&mut end, -1)?;
        }
        "processor" => {
            let input = t.socket(SocketType::Pull, "in")?;
            let output = t.socket(SocketType::Push, "out")?;
            output.set_linger(-1)?;
            input.attach(&args[1], &AttachOptions::new(Some(Method::Connect)))?;
            output.attach(&args[2], &AttachOptions::new(Some(Method::Connect)))?;
            loop {
                let mut m = Message::new();
                input.receive(&mut m, -1)?;
                let is_end = m.data()[..8] == END.to_le_bytes();
                output.send(&mut m, -1)?;
                if is_end {
                    break;
                }
            }
        }
        "sink" => {
            let input = t.socket(SocketType::Pull, "in")?;
            input.attach(&args[1], &AttachOptions::new(Some(Method::Bind)))?;
            let expected: u64 = args[2].parse()?;
            let mut m = Message::new();
            let (mut next, mut start) = (0u64, None);
            loop {
                input.receive(&mut m, -1)?;
                start.get_or_insert_with(Instant::now);
                let seq = u64::from_le_bytes(m.data()[..8].try_into()?);
                if seq == END {
                    let announced = u64::from_le_bytes(m.data()[8..16].try_into()?);
                    if announced != next || next != expected {
                        return Err(format!("received {next} messages, end message says {announced}").into());
                    }
                    break;
                }
                if seq != next {
                    return Err(format!("gap: expected message {next}, got {seq}").into());
                }
                next += 1;
            }
            let secs = start.map_or(0.0, |s| s.elapsed().as_secs_f64()).max(1e-9);
            let c = input.counters();
            println!(
                "sink: received {} messages, {} bytes, in {secs:.3} s: {:.0} msg/s, {:.1} MB/s; none lost",
                next,
                c.bytes_rx,
                next as f64 / secs,
                c.bytes_rx as f64 / 1e6 / secs
            );
        }
        other => return Err(format!("unknown role {other}").into()),
    }
    Ok(())
}
