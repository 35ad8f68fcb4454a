//! The session's shared-memory id, by FairMQ's rule.
//!
//! shmId = the first 4 bytes of SHA-256 over the decimal effective uid followed by the session name,
//! as 8 lowercase hex digits (uid 1000 + "default" gives `eca859e3`, as C++ FairMQ's
//! `fairmq-shmmonitor --get-shmid` prints). `--shmid` overrides it with a number given in decimal.

use sha2::{Digest, Sha256};

/// shmId for `session` and the given effective uid.
pub fn shm_id_for(uid: u32, session: &str) -> String {
    let mut h = Sha256::new();
    h.update(uid.to_string().as_bytes());
    h.update(session.as_bytes());
    let digest = h.finalize();
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// shmId for `session` and this process's effective uid.
pub fn shm_id(session: &str) -> String {
    shm_id_for(crate::sys::files::euid(), session)
}

/// The shmId form of an explicit `--shmid` value. The value is decimal on the command line and
/// hex in object names.
pub fn shm_id_from_number(n: u64) -> String {
    format!("{n:08x}")
}

/// The numeric form of a shmId (FairMQ's `makeShmIdUint64`), if it is hex.
pub fn shm_id_number(id: &str) -> Option<u64> {
    u64::from_str_radix(id, 16).ok()
}

/// Refuses a string that is not a shmId (1 to 16 hexadecimal digits). A shmId taken from a caller
/// goes into object names, where a value such as "../x" would act as a path.
pub(crate) fn check_shm_id(id: &str) -> Result<(), crate::ShmError> {
    if id.is_empty() || id.len() > 16 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(crate::ShmError::Config(format!("'{id}' is no shm id (up to 16 hexadecimal digits)")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairmq_test_vectors() {
        assert_eq!(shm_id_for(1000, "default"), "eca859e3");
        assert_eq!(shm_id_for(0, "default"), "f8fb93a1");
        assert_eq!(shm_id_for(1000, "mysession"), "b27b0a2e");
        assert_eq!(shm_id_from_number(3970456035), "eca859e3");
        assert_eq!(shm_id_number("eca859e3"), Some(3970456035));
        assert_eq!(shm_id_from_number(1), "00000001");
        assert!(check_shm_id("eca859e3").is_ok());
        assert!(["", "../x", "eca859e3/", &"f".repeat(17)].iter().all(|id| check_shm_id(id).is_err()));
    }
}
