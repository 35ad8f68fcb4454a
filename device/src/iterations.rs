//! The `--max-iterations` limit of FairMQ's examples.
//!
//! A device counts its iterations (messages sent, received or answered) with an [`Iterations`].
//! It leaves RUNNING once the count reaches the configured number. The number 0 means no limit.
//! [`Iterations::add_option`] adds the option to a program, and [`Iterations::from_config`]
//! reads it.
//!
//! The builtin benchmark sampler and sink count on their own, as FairMQ's do: they send or
//! receive `max + 1` messages and report `max`.

use crate::device::Context;
use crate::error::BoxError;
use crate::options::{Kind, OptionGroup};

/// The option's name.
pub const OPTION: &str = "max-iterations";

/// Iterations counted against `--max-iterations`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Iterations {
    max: u64,
    done: u64,
}

impl Iterations {
    /// Adds `--max-iterations` (default `default`, 0: no limit) to a device's options.
    pub fn add_option(o: &mut OptionGroup, default: u64) {
        o.add(OPTION, Kind::U64, default, "Maximum number of iterations of Run/ConditionalRun/OnData (0 - infinite)");
    }

    /// A counter with limit `max` (0: none).
    pub fn new(max: u64) -> Iterations {
        Iterations { max, done: 0 }
    }

    /// A counter with the configured limit (read it in `init_task`).
    pub fn from_config(ctx: &Context) -> Result<Iterations, BoxError> {
        Ok(Iterations::new(ctx.config().get(OPTION)?))
    }

    /// Iterations counted so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Whether the coming iteration is the last one (the multipart example flags its last message).
    pub fn next_is_last(&self) -> bool {
        self.max > 0 && self.done + 1 == self.max
    }

    /// Whether the limit is reached.
    fn reached(&self) -> bool {
        self.max > 0 && self.done >= self.max
    }

    /// Counts one iteration; true once the limit is reached, after FairMQ's log line.
    pub fn count(&mut self) -> bool {
        self.done += 1;
        let reached = self.reached();
        if reached {
            log::info!("Configured maximum number of iterations reached. Leaving RUNNING state.");
        }
        reached
    }
}

#[cfg(test)]
mod tests {
    use super::Iterations;

    #[test]
    fn counts_up_to_the_limit_and_zero_means_none() {
        let mut it = Iterations::new(3);
        assert!(!it.next_is_last());
        assert!(!it.count());
        assert!(!it.count());
        assert!(it.next_is_last(), "the third is the last of three");
        assert!(it.count());
        assert!(it.reached() && it.done() == 3);
        let mut unlimited = Iterations::new(0);
        assert!((0..1000).all(|_| !unlimited.count()) && !unlimited.next_is_last());
    }
}
