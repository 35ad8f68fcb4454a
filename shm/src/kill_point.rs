//! Points where a unit test stands in for a kill: armed, the point panics there, once. Between two
//! steps on shared memory a panic leaves what a kill would where the steps hold no message that
//! unwinding would release (arm only such points: at `Readers::close`'s, a lane is held), so a
//! test sees the state a process killed there leaves. A point can also run what another process
//! does meanwhile (a test's closure, once). Nothing outside tests: the point compiles to nothing.

#[cfg(test)]
type Meanwhile = Option<(&'static str, Box<dyn FnOnce()>)>;

#[cfg(test)]
thread_local! {
    static ARMED: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
    static MEANWHILE: std::cell::RefCell<Meanwhile> = const { std::cell::RefCell::new(None) };
}

/// Makes `f` run at point `name` the next time this thread reaches that point, once, before the
/// thread goes on. `f` stands for what another process does between two steps of this one.
#[cfg(test)]
pub(crate) fn meanwhile(name: &'static str, f: impl FnOnce() + 'static) {
    MEANWHILE.with(|m| *m.borrow_mut() = Some((name, Box::new(f))));
}

/// Arms point `name` on this thread: the next time this thread reaches the point, `here` panics.
#[cfg(test)]
pub(crate) fn arm(name: &'static str) {
    ARMED.with(|a| a.set(Some(name)));
}

/// Marks point `name`. Panics if a test armed this point with `arm`. Otherwise runs the closure
/// that a test set for this point with `meanwhile`, if any.
#[inline(always)]
pub(crate) fn here(name: &'static str) {
    #[cfg(test)]
    if ARMED.with(|a| a.get() == Some(name)) {
        ARMED.with(|a| a.set(None));
        panic!("killed at {name}");
    }
    #[cfg(test)]
    if let Some((_, f)) = MEANWHILE.with(|m| m.borrow_mut().take_if(|(at, _)| *at == name)) {
        f();
    }
    #[cfg(not(test))]
    let _ = name;
}
