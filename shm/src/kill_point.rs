//! Points where a unit test stands in for a kill: armed, the point panics there, once. Between two
//! steps on shared memory a panic leaves what a kill would (the steps here hold no message that
//! unwinding would release), so a test sees the state a process killed there leaves. Nothing
//! outside tests: the point compiles to nothing.

#[cfg(test)]
thread_local! {
    static ARMED: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
}

/// Arms point `name` on this thread: the next time it is reached, it panics.
#[cfg(test)]
pub(crate) fn arm(name: &'static str) {
    ARMED.with(|a| a.set(Some(name)));
}

/// Point `name`: panics when a test armed it.
#[inline(always)]
pub(crate) fn here(name: &'static str) {
    #[cfg(test)]
    if ARMED.with(|a| a.get() == Some(name)) {
        ARMED.with(|a| a.set(None));
        panic!("killed at {name}");
    }
    #[cfg(not(test))]
    let _ = name;
}
