//! A session of a unit test's own, removed with all it holds when the test ends, also when it
//! fails.

use crate::naming::Names;

pub(crate) struct Scratch(pub(crate) Names);

impl Scratch {
    /// The session of shmId `shm_id`.
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
