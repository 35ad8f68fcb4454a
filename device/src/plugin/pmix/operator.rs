//! An operator's commands from outside the job. A PMIx tool would connect to the launcher's PMIx
//! server, but neither launcher here takes tool connections (OpenMPI 4.1's `mpirun` crashed when
//! one connected; Slurm's PMIx plugin offers none). So the job's `fairmq-pmix-command serve`
//! process listens on a ZeroMQ ipc socket named by its namespace, in a directory only its user
//! may enter: `$FAIRMQ_PMIX_DIR`, else `$XDG_RUNTIME_DIR/fairmq-pmix`, else
//! `/tmp/fairmq-pmix-<uid>`. The directory's permissions are the access control: one that another
//! user owns or may enter is refused, never used.
//!
//! A request is a multipart: the timeout in seconds, then the command words. The reply: `ok` or
//! `error`, then the text (what `state` prints, or what went wrong). Requests are checked as any
//! input from another process: a malformed one gets an `error` reply, never ends the service.

use super::controller::Controller;
use crate::BoxError;
use fairmq_zmq::{Message, SocketType, Transport};
use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// At most this many words in one request, and this long a timeout (a day).
const MAX_WORDS: usize = 64;
const MAX_TIMEOUT_S: u64 = 86_400;
/// `sun_path` holds 108 bytes with its terminating zero.
const MAX_SOCKET_PATH: usize = 107;

/// The rendezvous directory, created (mode 0700) if missing; an error if it is not a directory
/// that only this user owns and may enter.
fn directory() -> Result<PathBuf, BoxError> {
    let euid = nix::unistd::geteuid().as_raw();
    let dir = match (std::env::var_os("FAIRMQ_PMIX_DIR"), std::env::var_os("XDG_RUNTIME_DIR")) {
        (Some(d), _) => PathBuf::from(d),
        (None, Some(run)) => Path::new(&run).join("fairmq-pmix"),
        (None, None) => PathBuf::from(format!("/tmp/fairmq-pmix-{euid}")),
    };
    match fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display()).into()),
    }
    check_private(&dir, euid)?;
    Ok(dir)
}

/// Refuses `dir` unless it is a real directory (no symbolic link) owned by `euid` that no one
/// else may enter or write.
fn check_private(dir: &Path, euid: u32) -> Result<(), BoxError> {
    let m = fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !m.file_type().is_dir() {
        return Err(format!("refusing {}: not a directory", dir.display()).into());
    }
    if m.uid() != euid {
        return Err(format!("refusing {}: owned by user {}, not by this user ({euid})", dir.display(), m.uid()).into());
    }
    if m.mode() & 0o077 != 0 {
        return Err(format!(
            "refusing {}: others may use it (mode {:o}; it must be 700)",
            dir.display(),
            m.mode() & 0o777
        )
        .into());
    }
    Ok(())
}

/// A namespace as a file name: every character but letters, digits and `._@+-` becomes `_`, and a
/// leading dot too (no hidden files, no `..`). Applying it twice changes nothing.
fn file_name(namespace: &str) -> String {
    let mut name: String =
        namespace.chars().map(|c| if c.is_ascii_alphanumeric() || "._@+-".contains(c) { c } else { '_' }).collect();
    if name.starts_with('.') {
        name.replace_range(0..1, "_");
    }
    name
}

/// The socket of `namespace` in `dir`; an error for an empty namespace or a path too long for a
/// unix socket.
fn socket_path(dir: &Path, namespace: &str) -> Result<PathBuf, BoxError> {
    if namespace.is_empty() {
        return Err("the namespace is empty".into());
    }
    let path = dir.join(format!("{}.sock", file_name(namespace)));
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(
            format!("{} is too long for a unix socket (at most {MAX_SOCKET_PATH} bytes)", path.display()).into()
        );
    }
    Ok(path)
}

/// The namespaces served on this host (their sockets in the rendezvous directory).
pub(super) fn served_namespaces() -> Result<Vec<String>, BoxError> {
    let mut names: Vec<String> = fs::read_dir(directory()?)?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".sock").map(str::to_owned))
        .collect();
    names.sort();
    Ok(names)
}

/// Removes the socket file when the service ends (also on an error).
struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Serves operators' requests for the job `namespace` until every device is EXITING; true then.
pub(super) fn serve(c: &mut Controller, namespace: &str) -> Result<bool, BoxError> {
    let path = socket_path(&directory()?, namespace)?;
    // A socket file left by a killed service of the same namespace would make bind fail.
    let _ = fs::remove_file(&path);
    let socket = c.transport.socket(SocketType::Rep, "pmix-operator")?;
    socket.bind(&format!("ipc://{}", path.display()))?;
    let _file = SocketFile(path);
    log::info!("pmix command: serving namespace {namespace}: fairmq-pmix-command --namespace {namespace} COMMAND...");
    let default_timeout = c.timeout;
    while !c.all_exiting() {
        c.receive_one(20)?;
        let mut parts = Vec::new();
        if socket.receive_parts(&mut parts, 0).is_err() {
            continue;
        }
        let reply = match request(&parts) {
            Ok((timeout, words)) => {
                log::info!("pmix command: an operator asks for '{}'", words.join(" "));
                c.timeout = timeout.unwrap_or(default_timeout);
                c.execute(&words)
            }
            Err(e) => Err(e),
        };
        let (status, text) = match reply {
            Ok(text) => ("ok", text),
            Err(e) => ("error", e.to_string()),
        };
        let mut out = vec![Message::from_slice(status.as_bytes()), Message::from_slice(text.as_bytes())];
        socket.send_parts(&mut out, 10_000)?;
    }
    Ok(true)
}

/// The timeout and words of a request, checked.
fn request(parts: &[Message]) -> Result<(Option<Duration>, Vec<String>), BoxError> {
    let (timeout, words) = parts.split_first().ok_or("an empty request")?;
    if words.is_empty() || words.len() > MAX_WORDS {
        return Err(format!("a request carries 1 to {MAX_WORDS} words, not {}", words.len()).into());
    }
    let timeout: u64 = std::str::from_utf8(timeout.data())
        .ok()
        .and_then(|t| t.parse().ok())
        .filter(|&t| t <= MAX_TIMEOUT_S)
        .ok_or("the request's timeout is not a number of seconds up to a day")?;
    let words = words
        .iter()
        .map(|w| std::str::from_utf8(w.data()).map(str::to_owned))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| "a request's words must be UTF-8")?;
    Ok(((timeout > 0).then(|| Duration::from_secs(timeout)), words))
}

/// Sends `words` to the job `namespace` served on this host and prints the reply; whether the
/// command succeeded.
pub(super) fn send(namespace: &str, timeout_s: u64, words: &[String]) -> Result<bool, BoxError> {
    let path = socket_path(&directory()?, namespace)?;
    if !path.exists() {
        return Err(format!(
            "no fairmq-pmix-command serves namespace '{namespace}' on this host (no {}); the job needs \
             `: -n 1 fairmq-pmix-command serve`, and this command runs on that process's host",
            path.display()
        )
        .into());
    }
    let transport = Transport::new("pmix-operator")?;
    // The socket's name is its routing id: one of its own, or the service could take it for the
    // previous operator's connection, not yet closed, and drop the request.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let socket = transport.socket(SocketType::Req, &format!("pmix-operator-{}-{nanos}", std::process::id()))?;
    socket.connect(&format!("ipc://{}", path.display()))?;
    let mut parts = vec![Message::from_slice(timeout_s.min(MAX_TIMEOUT_S).to_string().as_bytes())];
    parts.extend(words.iter().map(|w| Message::from_slice(w.as_bytes())));
    socket.send_parts(&mut parts, 10_000).map_err(|e| format!("the service of namespace '{namespace}': {e}"))?;
    // The service answers once the command ran: allow its own timeout and some.
    let wait_ms = i32::try_from(timeout_s.saturating_add(10).saturating_mul(1000)).unwrap_or(i32::MAX);
    let mut reply = Vec::new();
    socket.receive_parts(&mut reply, wait_ms).map_err(|e| {
        format!(
            "no answer from the service of namespace '{namespace}' within {} s ({e}); is the job still running?",
            wait_ms / 1000
        )
    })?;
    let text = |i: usize| reply.get(i).map(|m| String::from_utf8_lossy(m.data()).into_owned()).unwrap_or_default();
    match text(0).as_str() {
        "ok" => {
            print!("{}", text(1));
            Ok(true)
        }
        "error" => Err(text(1).into()),
        other => Err(format!("an unknown reply '{other}' from the service of namespace '{namespace}'").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn namespaces_become_plain_file_names() {
        assert_eq!(file_name("slurm.pmix.12.0"), "slurm.pmix.12.0");
        assert_eq!(file_name("prterun-vm-42@1"), "prterun-vm-42@1");
        assert_eq!(file_name("../etc/x"), "_._etc_x");
        assert_eq!(file_name(".."), "_.");
        assert_eq!(file_name(&file_name("a/b c")), file_name("a/b c"));
        let dir = Path::new("/run/x");
        assert!(socket_path(dir, "").is_err());
        assert!(socket_path(dir, &"n".repeat(200)).is_err());
        assert_eq!(socket_path(dir, "a/b").unwrap(), Path::new("/run/x/a_b.sock"));
    }

    #[test]
    fn a_directory_others_may_use_is_refused() {
        let euid = nix::unistd::geteuid().as_raw();
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("d");
        fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        check_private(&dir, euid).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check_private(&dir, euid).unwrap_err().to_string().contains("mode 755"));
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        assert!(check_private(&dir, euid + 1).unwrap_err().to_string().contains("owned by user"));
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(check_private(&link, euid).unwrap_err().to_string().contains("not a directory"));
    }

    #[test]
    fn malformed_requests_are_refused() {
        let m = |parts: &[&str]| parts.iter().map(|p| Message::from_slice(p.as_bytes())).collect::<Vec<_>>();
        assert_eq!(request(&m(&["30", "stop"])).unwrap(), (Some(Duration::from_secs(30)), vec!["stop".to_owned()]));
        assert_eq!(request(&m(&["0", "state"])).unwrap().0, None);
        let many: Vec<&str> = std::iter::once("5").chain(std::iter::repeat_n("state", 65)).collect();
        for bad in [&[][..], &["30"], &["soon", "stop"], &["-1", "stop"], &["99999999", "stop"], &many] {
            assert!(request(&m(bad)).is_err(), "{bad:?}");
        }
        let not_utf8 = vec![Message::from_slice(b"5"), Message::from_slice(&[0xff, 0xfe])];
        assert!(request(&not_utf8).is_err());
    }
}
