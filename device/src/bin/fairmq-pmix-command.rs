//! `fairmq-pmix-command`: drives the devices of a PMIx job (see `fairmq::plugin::pmix::command`).
//! Run it as a process of the job: `mpirun <devices with -P pmix --control none> : -n 1
//! fairmq-pmix-command run stop`.

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::ExitCode::from(fairmq::plugin::pmix::command::main_with_args(&args))
}
