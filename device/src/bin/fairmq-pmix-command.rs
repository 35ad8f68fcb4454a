//! `fairmq-pmix-command`: drives the devices of a PMIx job, as a process of the job (`run stop`,
//! or `serve` for operators) or as an operator outside it (`--namespace NS stop`); see
//! `fairmq::plugin::pmix::command`.

fn main() -> std::process::ExitCode {
    let args = match fairmq::process_args() {
        Ok(a) => a,
        Err(code) => return code,
    };
    std::process::ExitCode::from(fairmq::plugin::pmix::command::main_with_args(&args))
}
