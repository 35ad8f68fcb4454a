//! `fairmq-uuid-gen`: prints a random UUID (version 4), or with `-h`/`--hash` a number made from
//! one (FairMQ's tool of the same name, used to make unique session names in scripts).

use std::hash::{Hash, Hasher};
use std::io::Read;
use std::process::ExitCode;

const HELP: &str = "UUID generator\nOptions:\n  -h [ --hash ] arg      Generates UUID and returns its hash.\n  --help                 Print help\n";

/// Returns a random version-4 UUID, made from the kernel's random source (`/dev/urandom`).
fn uuid() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    b[6] = (b[6] & 0x0f) | 0x40; // version 4
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32]))
}

/// Parses the command line and returns whether to print the hash. The accepted forms are `-h`,
/// `--hash`, `--hash=true|false` and `-h false`. Returns `Ok(None)` for `--help`, and `Err` with a
/// message for any other token.
fn parse(args: &[String]) -> Result<Option<bool>, String> {
    let mut hash = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "--help" => return Ok(None),
            "-h" | "--hash" => {
                hash = true;
                if let Some(v) = args.get(i + 1).and_then(|v| fairmq::options::parse_bool(v)) {
                    hash = v;
                    i += 1;
                }
            }
            _ => match a.strip_prefix("--hash=").or_else(|| a.strip_prefix("-h")) {
                Some(v) => {
                    hash = fairmq::options::parse_bool(v)
                        .ok_or_else(|| format!("the argument ('{v}') for option '--hash' is invalid"))?
                }
                None => return Err(format!("unrecognised option '{a}'")),
            },
        }
        i += 1;
    }
    Ok(Some(hash))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let hash = match parse(&args) {
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Ok(Some(h)) => h,
        Err(e) => {
            eprintln!("Unhandled Exception reached the top of main: {e}, application will now exit");
            return ExitCode::from(2);
        }
    };
    let id = match uuid() {
        Ok(id) => id,
        Err(e) => {
            eprintln!("Unhandled Exception reached the top of main: no random source ({e}), application will now exit");
            return ExitCode::from(2);
        }
    };
    if hash {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        id.hash(&mut h);
        println!("{}", h.finish());
    } else {
        println!("{id}");
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn options_are_fairmqs() {
        assert_eq!(parse(&args("")), Ok(Some(false)));
        assert_eq!(parse(&args("-h")), Ok(Some(true)));
        assert_eq!(parse(&args("--hash false")), Ok(Some(false)));
        assert_eq!(parse(&args("--hash=true")), Ok(Some(true)));
        assert_eq!(parse(&args("--help")), Ok(None));
        assert!(parse(&args("--nope")).is_err());
        let u = uuid().unwrap();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4", "{u}");
        assert_ne!(u, uuid().unwrap());
    }
}
