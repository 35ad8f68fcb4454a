//! A session of a unit test's own, removed with all it holds when the test ends, also when it
//! fails.

use crate::naming::Names;

pub(crate) struct Scratch(pub(crate) Names);

impl Scratch {
    /// The scratch session with shmId `shm_id`.
    pub(crate) fn of_shm_id(shm_id: &str) -> Scratch {
        Scratch(Names::new(shm_id))
    }

    /// A session named after `tag` and this process.
    pub(crate) fn new(tag: &str) -> Scratch {
        Scratch::of_shm_id(&crate::shm_id(&format!("{tag}-{}", std::process::id())))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = crate::monitor::cleanup_full(self.0.shm_id());
    }
}

/// Creates an attachment (a transport's state, without sockets) to a scratch session of its own,
/// with an 8 MiB segment. Drop the attachment before the `Scratch`: binding the pair in the order
/// returned does that.
pub(crate) fn attachment(tag: &str) -> (Scratch, std::sync::Arc<crate::transport::attachment::Attachment>) {
    let mut c = crate::transport::config::ShmConfig::new(tag, &format!("{tag}-{}", std::process::id()));
    c.segment_size = 8 << 20;
    let scratch = Scratch::of_shm_id(&c.resolved_shm_id());
    let interrupter = std::sync::Arc::new(fairmq_zmq::Interrupter::new().expect("an interrupter"));
    let a = crate::transport::attachment::Attachment::new(&c, interrupter).expect("an attachment");
    (scratch, std::sync::Arc::new(a))
}
