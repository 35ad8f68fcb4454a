//! An operator's commands from outside the job. A PMIx tool would connect to the launcher's PMIx
//! server, but neither launcher here takes tool connections (OpenMPI 4.1's `mpirun` crashed when
//! one connected; Slurm's PMIx plugin offers none). So the job's `fairmq-pmix-command serve`
//! process listens on a ZeroMQ ipc socket named by its namespace, in a directory only its user
//! may enter: `$FAIRMQ_PMIX_DIR` (an absolute path), else `/tmp/fairmq-pmix-<uid>`. Permissions
//! are the access control: a directory that another user owns or may enter, or one whose parents
//! another user could swap, is refused, never used.
//!
//! A request is a multipart: the timeout in seconds, then the command words. The reply: `ok` or
//! `error`, then the text (what `state` prints, or what went wrong). Requests are checked as any
//! input from another process, every word before any command runs: a malformed one gets an
//! `error` reply, never ends the service.

use super::controller::Controller;
use super::steps::{self, Step, MAX_TIMEOUT_S};
use crate::BoxError;
use fairmq_zmq::{Message, SocketType, Transport};
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// At most this many words in one request.
const MAX_WORDS: usize = 64;
/// The longest socket path: `sun_path` holds 108 bytes, including the terminating zero.
const MAX_SOCKET_PATH: usize = 107;

/// Returns the rendezvous directory, and creates it with mode 0700 if it is missing. Returns an
/// error if the directory or a parent is not safe (see [`check_private`] and
/// `file_trust::check_parents`).
fn directory() -> Result<PathBuf, BoxError> {
    let euid = nix::unistd::geteuid().as_raw();
    let dir = match std::env::var_os("FAIRMQ_PMIX_DIR") {
        Some(d) => {
            let d = PathBuf::from(d);
            if !d.is_absolute() || d.to_str().is_none() {
                return Err(format!("FAIRMQ_PMIX_DIR must be an absolute UTF-8 path, not {}", d.display()).into());
            }
            d
        }
        None => PathBuf::from(format!("/tmp/fairmq-pmix-{euid}")),
    };
    crate::file_trust::check_parents(&dir, euid)?;
    match fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display()).into()),
    }
    check_private(&dir, euid)?;
    Ok(dir)
}

/// Refuses `dir` unless it is a real directory (not a symbolic link), owned by `euid`, that no
/// one else may enter or write.
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

/// The path of the socket of `namespace` in `dir`. A namespace is refused unless it is made of
/// letters, digits and `._@+-`, without a leading dot. Every launcher's namespaces are. The rule
/// ensures that two namespaces never share a file.
fn socket_path(dir: &Path, namespace: &str) -> Result<PathBuf, BoxError> {
    let plain = namespace.chars().all(|c| c.is_ascii_alphanumeric() || "._@+-".contains(c));
    if namespace.is_empty() || namespace.starts_with('.') || !plain {
        return Err(format!("'{namespace}' is no PMIx namespace this command serves (letters, digits, ._@+-)").into());
    }
    let path = dir.join(format!("{namespace}.sock"));
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(
            format!("{} is too long for a unix socket (at most {MAX_SOCKET_PATH} bytes)", path.display()).into()
        );
    }
    Ok(path)
}

/// Whether a process listens on the socket file `path`. Returns false when none does: the file
/// was left by a service that was killed, or there is no file. Other failures are errors.
fn listened(path: &Path) -> Result<bool, BoxError> {
    match UnixStream::connect(path) {
        Ok(_) => Ok(true),
        Err(e) if matches!(e.kind(), ErrorKind::ConnectionRefused | ErrorKind::NotFound) => Ok(false),
        Err(e) => Err(format!("{}: {e}", path.display()).into()),
    }
}

/// The namespaces served on this host: those whose sockets a process listens on.
pub(super) fn served_namespaces() -> Result<Vec<String>, BoxError> {
    let dir = directory()?;
    let mut names: Vec<String> = fs::read_dir(&dir)?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".sock").map(str::to_owned))
        .filter(|ns| listened(&dir.join(format!("{ns}.sock"))).unwrap_or(false))
        .collect();
    names.sort();
    Ok(names)
}

/// The socket file that this service bound. The file is removed when the service ends, also on
/// an error, unless another file took its place by then.
struct SocketFile {
    path: PathBuf,
    inode: Option<(u64, u64)>,
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let now = fs::symlink_metadata(&self.path).ok().map(|m| (m.dev(), m.ino()));
        if now.is_some() && now == self.inode {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Serves operators' requests for the job `namespace` until every device is EXITING, and then
/// returns true. `timeout` is the longest that the service waits for a command to take.
pub(super) fn serve(c: &mut Controller, namespace: &str, timeout: Duration) -> Result<bool, BoxError> {
    let path = socket_path(&directory()?, namespace)?;
    if listened(&path)? {
        return Err(format!("namespace {namespace} is served already (by another `serve` of this job?)").into());
    }
    // Remove a file left by a killed service, because bind would fail on it.
    let _ = fs::remove_file(&path);
    let socket = super::control_socket(&c.transport, SocketType::Rep, "pmix-operator")?;
    let address = format!("ipc://{}", path.to_str().ok_or("the socket's path is not UTF-8")?);
    socket.bind(&address)?;
    let inode = fs::symlink_metadata(&path).ok().map(|m| (m.dev(), m.ino()));
    let _file = SocketFile { path, inode };
    log::info!("pmix command: serving namespace {namespace}: fairmq-pmix-command --namespace {namespace} COMMAND...");
    while !c.all_exiting() {
        c.receive_one(20)?;
        let mut parts = Vec::new();
        if socket.receive_parts(&mut parts, 0).is_err() {
            continue;
        }
        let reply = request(&parts).and_then(|(t, words, steps)| {
            log::info!("pmix command: an operator asks for '{}'", words.join(" "));
            c.execute(&steps, t.min(timeout))
        });
        let (status, text) = match reply {
            Ok(text) => ("ok", text),
            Err(e) => ("error", e.to_string()),
        };
        let mut out = vec![Message::from_slice(status.as_bytes()), Message::from_slice(text.as_bytes())];
        socket.send_parts(&mut out, 10_000)?;
    }
    Ok(true)
}

/// Reads and checks the timeout, words and commands of a request.
fn request(parts: &[Message]) -> Result<(Duration, Vec<String>, Vec<Step>), BoxError> {
    let (timeout, words) = parts.split_first().ok_or("an empty request")?;
    if words.is_empty() || words.len() > MAX_WORDS {
        return Err(format!("a request carries 1 to {MAX_WORDS} words, not {}", words.len()).into());
    }
    let timeout = steps::timeout(std::str::from_utf8(timeout.data()).map_err(|_| "the timeout is not UTF-8")?)?;
    let words = words
        .iter()
        .map(|w| std::str::from_utf8(w.data()).map(str::to_owned))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| "a request's words must be UTF-8")?;
    let steps = steps::parse(&words)?;
    Ok((timeout, words, steps))
}

/// Sends `words` to the job `namespace`, which is served on this host. Returns what the commands
/// printed, or an error when one of them failed. `timeout` is how long the commands may take. The
/// service answers once they are done.
pub(super) fn send(namespace: &str, timeout: Duration, words: &[String]) -> Result<String, BoxError> {
    let path = socket_path(&directory()?, namespace)?;
    if !listened(&path)? {
        return Err(format!(
            "no fairmq-pmix-command serves namespace '{namespace}' on this host (nothing listens on {}); \
             the job needs `: -n 1 fairmq-pmix-command serve`, and this command runs on that process's host",
            path.display()
        )
        .into());
    }
    let transport = Transport::new("pmix-operator")?;
    // The socket's name is its routing id, so the name must be this socket's own. Otherwise the
    // service could take this connection for the previous operator's connection, which is not
    // yet closed, and drop the request.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let name = format!("pmix-operator-{}-{nanos}", std::process::id());
    let socket = super::control_socket(&transport, SocketType::Req, &name)?;
    socket.connect(&format!("ipc://{}", path.to_str().ok_or("the socket's path is not UTF-8")?))?;
    let timeout_s = timeout.as_secs().clamp(1, MAX_TIMEOUT_S);
    let mut parts = vec![Message::from_slice(timeout_s.to_string().as_bytes())];
    parts.extend(words.iter().map(|w| Message::from_slice(w.as_bytes())));
    socket.send_parts(&mut parts, 10_000).map_err(|e| format!("the service of namespace '{namespace}': {e}"))?;
    // Wait for the commands' own time, plus some time for the answer to travel.
    let wait_s = timeout_s + 10;
    let mut reply = Vec::new();
    socket.receive_parts(&mut reply, i32::try_from(wait_s * 1000).unwrap_or(i32::MAX)).map_err(|e| {
        format!(
            "no answer from the service of namespace '{namespace}' within {wait_s} s ({e}); is the job still running?"
        )
    })?;
    let text = |i: usize| reply.get(i).map(|m| String::from_utf8_lossy(m.data()).into_owned()).unwrap_or_default();
    match text(0).as_str() {
        "ok" => Ok(text(1)),
        "error" => Err(text(1).into()),
        other => Err(format!("an unknown reply '{other}' from the service of namespace '{namespace}'").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn namespaces_are_plain_file_names_or_refused() {
        let dir = Path::new("/run/x");
        assert_eq!(socket_path(dir, "slurm.pmix.12.0").unwrap(), Path::new("/run/x/slurm.pmix.12.0.sock"));
        assert_eq!(socket_path(dir, "prterun-vm-42@1").unwrap(), Path::new("/run/x/prterun-vm-42@1.sock"));
        for bad in ["", ".", "..", ".hidden", "a/b", "../etc/x", "a b", "a\0b", "ünï"] {
            assert!(socket_path(dir, bad).is_err(), "{bad:?}");
        }
        assert!(socket_path(dir, &"n".repeat(200)).is_err());
    }

    #[test]
    fn a_directory_others_may_use_is_refused() {
        let euid = nix::unistd::geteuid().as_raw();
        let base = tempfile::tempdir().unwrap();
        fs::set_permissions(base.path(), fs::Permissions::from_mode(0o700)).unwrap();
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
        // In a parent that others may write (without the sticky bit), another user could swap
        // the directory.
        fs::set_permissions(base.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let parents = crate::file_trust::check_parents(&dir, euid);
        assert!(parents.unwrap_err().contains("could be changed by another user"));
        fs::set_permissions(base.path(), fs::Permissions::from_mode(0o1777)).unwrap();
        crate::file_trust::check_parents(&dir, euid).unwrap();
    }

    #[test]
    fn malformed_requests_are_refused() {
        let m = |parts: &[&str]| parts.iter().map(|p| Message::from_slice(p.as_bytes())).collect::<Vec<_>>();
        let (t, words, steps) = request(&m(&["30", "stop"])).unwrap();
        assert_eq!((t, words, steps), (Duration::from_secs(30), vec!["stop".to_owned()], vec![Step::Stop]));
        let many: Vec<&str> = std::iter::once("5").chain(std::iter::repeat_n("state", 65)).collect();
        for bad in [
            &[][..],
            &["30"],
            &["soon", "stop"],
            &["0", "stop"],
            &["-1", "stop"],
            &["99999999", "stop"],
            &["30", "run", "stpo"],
            &many,
        ] {
            assert!(request(&m(bad)).is_err(), "{bad:?}");
        }
        let not_utf8 = vec![Message::from_slice(b"5"), Message::from_slice(&[0xff, 0xfe])];
        assert!(request(&not_utf8).is_err());
    }

    #[test]
    fn a_socket_file_nobody_listens_on_is_told_apart_from_a_live_one() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("ns.sock");
        assert!(!listened(&path).unwrap());
        let live = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert!(listened(&path).unwrap());
        drop(live); // the file stays, as after a killed service
        assert!(path.exists() && !listened(&path).unwrap());
    }
}
