//! Creating a device's transports from its options.

use crate::error::Error;
use crate::properties::Properties;
use crate::transport::Transport;
use fairmq_shm::{BadAllocPolicy, ShmConfig};
use fairmq_zmq::{TransportConfig, TransportKind};

/// Reads the shared-memory settings from the device options (`--session`, `--shm-*`,
/// `--bad-alloc-*` and others).
pub fn shm_config(id: &str, p: &Properties) -> Result<ShmConfig, Error> {
    let d = ShmConfig::default();
    let interval = p.get_or::<i32>("bad-alloc-attempt-interval", 50)?;
    // FairMQ accepts the names of its two Boost allocators and refuses any other name when it
    // creates the transport. Either name selects our TLSF allocator.
    let allocation = p.get_or::<String>("shm-allocation", "rbtree_best_fit".into())?;
    if !matches!(allocation.as_str(), "rbtree_best_fit" | "simple_seq_fit") {
        return Err(fairmq_shm::ShmError::Config(format!(
            "Provided shared memory allocation algorithm '{allocation}' is not supported. Supported are \"rbtree_best_fit\"/\"simple_seq_fit\""
        ))
        .into());
    }
    Ok(ShmConfig {
        id: id.to_owned(),
        session: p.get_or::<String>("session", d.session)?,
        shm_id: match p.get::<u64>("shmid") {
            Ok(v) => Some(v),
            Err(crate::properties::PropertyError::NotFound(_)) => None,
            Err(e) => return Err(e.into()),
        },
        segment_size: p.get_or::<u64>("shm-segment-size", d.segment_size)?,
        segment_id: p.get_or::<u16>("shm-segment-id", 0)?,
        mlock_segment: p.get_or("shm-mlock-segment", false)?,
        mlock_segment_on_creation: p.get_or("shm-mlock-segment-on-creation", false)?,
        zero_segment: p.get_or("shm-zero-segment", false)?,
        zero_segment_on_creation: p.get_or("shm-zero-segment-on-creation", false)?,
        bad_alloc: BadAllocPolicy::from_options(
            p.get_or("shm-throw-bad-alloc", true)?,
            p.get::<i32>("bad-alloc-max-attempts").ok(),
            u64::try_from(interval.max(0)).unwrap_or(50),
        ),
        no_cleanup: p.get_or("shm-no-cleanup", false)?,
        metadata_msg_size: p.get_or::<usize>("shm-metadata-msg-size", 0)?,
        io_threads: p.get_or::<i32>("io-threads", 1)?,
        monitor: p.get_or("shm-monitor", false)?,
        lanes: p.get_or("shm-lanes", true)?,
        // The metrics endpoint writes its bound address back into this option once it has
        // started. Before that, a value that does not parse as an address gives none.
        metrics_endpoint: p.get_or::<String>(crate::options::METRICS_ADDRESS, String::new())?.parse().ok(),
    })
}

/// Creates a new transport of `kind` for device `id`.
pub fn create(kind: TransportKind, id: &str, p: &Properties) -> Result<Transport, Error> {
    Ok(match kind {
        TransportKind::Zeromq | TransportKind::Default => {
            Transport::Zeromq(fairmq_zmq::Transport::with_config(&TransportConfig {
                id: id.to_owned(),
                io_threads: p.get_or::<i32>("io-threads", 1)?,
            })?)
        }
        TransportKind::Shmem => Transport::Shmem(fairmq_shm::Transport::new(&shm_config(id, p)?)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::properties::Value;

    #[test]
    fn only_fairmqs_allocator_names_are_accepted() {
        let p = Properties::new();
        for ok in ["rbtree_best_fit", "simple_seq_fit"] {
            p.set("shm-allocation", Value::Str(ok.into()));
            assert!(shm_config("d", &p).is_ok(), "{ok}");
        }
        p.set("shm-allocation", Value::Str("foo".into()));
        let e = shm_config("d", &p).unwrap_err().to_string();
        assert!(e.contains("'foo' is not supported"), "{e}");
    }
}
