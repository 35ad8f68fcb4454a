//! Writing to the console without ever failing a device: when stdout is closed or broken (its
//! reader left a pipe, `| head`), the text is lost, as C++ FairMQ's is (its streams go bad and stay
//! quiet). `println!` would panic there, and the panic's own report would abort the process.

use std::io::Write;

/// Writes `text` to stdout as it is.
pub(crate) fn text(text: &str) {
    // Unit tests capture what the print macros write; their failures show it.
    if cfg!(test) {
        print!("{text}");
    } else {
        let _ = std::io::stdout().lock().write_all(text.as_bytes());
    }
}

/// Writes `text` and a newline to stdout.
pub(crate) fn line(text: &str) {
    if cfg!(test) {
        println!("{text}");
    } else {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.write_all(b"\n"));
    }
}
