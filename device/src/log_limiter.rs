//! Summarising repeated log lines: [`RepeatLimiter`].
//!
//! Mature daemons do the same: the kernel's printk rate limit, rsyslog's "message repeated N
//! times", journald's "Suppressed N messages". The limiter works in windows of one second
//! ([`WINDOW`]):
//!
//! 1. A burst of [`BURST`] lines of one kind passes.
//! 2. After the burst, each further line of that kind within the window is held back and counted.
//! 3. When the window is over, a single [`Summary`] says how many more lines came. It shows the
//!    last line it held back.
//! 4. While the flood goes on, each second gives one summary and nothing else. A second without
//!    the line ends the limiting, and the next line of its kind starts a new burst.
//!
//! Lines are counted by the kind of event, not by their text. A [`LineKey`] names the kind: the
//! severity, the target and the place in the code that logged the line. (A flood of refused
//! frames differs from line to line in ticket numbers and segment ids, yet is one event
//! repeated.) The time comes in as an argument, so tests drive the clock.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The number of lines of one kind that pass in a window before the limiting starts.
pub(crate) const BURST: u32 = 10;
/// The period one summary covers.
pub(crate) const WINDOW: Duration = Duration::from_secs(1);
/// The most kinds of line tracked at once. Lines of further kinds pass without limit. This is
/// enough because only repeated lines need tracking, and the entry of a kind goes away one window
/// after a line of that kind was last seen.
const TRACKED: usize = 1024;

/// What makes lines one kind of event: the severity (as `log` sees it), the target, and the place
/// that logged them. The place is `file:line`, or the line's text when the place is not known.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LineKey {
    pub level: log::Level,
    pub target: String,
    pub site: String,
}

#[derive(Debug)]
struct Entry {
    /// The start of the current window.
    since: Instant,
    /// The number of lines passed in the current window.
    passed: u32,
    /// The number of lines held back in the current window.
    held: u64,
    /// Set once the burst is over. Lines of this kind then pass no more, until a whole window
    /// goes by without one.
    limiting: bool,
    /// The text of the last line held back, which the summary shows.
    sample: String,
}

/// A summary of held-back lines: their kind, the text of the last one, their number, and the time
/// they span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    pub key: LineKey,
    pub sample: String,
    pub held: u64,
    pub span: Duration,
}

impl Summary {
    /// The summary line's text.
    pub(crate) fn text(&self) -> String {
        format!("{} [{} more like this in the last {:.1} s]", self.sample, self.held, self.span.as_secs_f64())
    }
}

/// What the limiter decides for a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The line is written.
    Pass,
    /// The line is held back, and it is the first held back in its window. Whoever writes the
    /// summaries must learn that one is due.
    HoldFirst,
    /// The line is held back, after others held back in the same window.
    Hold,
}

/// Decides which lines pass and collects the summaries due.
#[derive(Debug)]
pub(crate) struct RepeatLimiter {
    lines: BTreeMap<LineKey, Entry>,
    /// No window ends before this instant, so `RepeatLimiter::due` has nothing to do until then.
    next_due: Option<Instant>,
}

impl RepeatLimiter {
    pub(crate) const fn new() -> Self {
        RepeatLimiter { lines: BTreeMap::new(), next_due: None }
    }

    /// Decides whether the line `text` of kind `key`, logged at `now`, is written or held back.
    pub(crate) fn admit(&mut self, key: &LineKey, text: &str, now: Instant) -> Verdict {
        if !self.lines.contains_key(key) {
            if self.lines.len() >= TRACKED {
                return Verdict::Pass;
            }
            self.next_due = Some(self.next_due.map_or(now + WINDOW, |d| d.min(now + WINDOW)));
            self.lines
                .insert(key.clone(), Entry { since: now, passed: 0, held: 0, limiting: false, sample: String::new() });
        }
        let Some(e) = self.lines.get_mut(key) else { return Verdict::Pass };
        if !e.limiting && now >= e.since + WINDOW {
            // Start a new window. The entry's previous window ended without any line held back.
            *e = Entry { since: now, passed: 0, held: 0, limiting: false, sample: String::new() };
        }
        if !e.limiting && e.passed < BURST {
            e.passed += 1;
            return Verdict::Pass;
        }
        e.limiting = true;
        e.held += 1;
        text.clone_into(&mut e.sample);
        if e.held == 1 {
            Verdict::HoldFirst
        } else {
            Verdict::Hold
        }
    }

    /// Returns the summaries of the windows that ended by `now`, one per kind of line that was
    /// held back. Also forgets the kinds of line that were quiet for a whole window.
    pub(crate) fn due(&mut self, now: Instant) -> Vec<Summary> {
        if self.next_due.is_none_or(|d| now < d) {
            return Vec::new();
        }
        let mut out = Vec::new();
        self.lines.retain(|key, e| {
            if now < e.since + WINDOW {
                return true;
            }
            if e.held == 0 {
                return false; // quiet for a window: limiting ends
            }
            out.push(Summary {
                key: key.clone(),
                sample: std::mem::take(&mut e.sample),
                held: e.held,
                span: now - e.since,
            });
            *e = Entry { since: now, passed: 0, held: 0, limiting: true, sample: String::new() };
            true
        });
        self.next_due = self.lines.values().map(|e| e.since + WINDOW).min();
        out
    }

    /// When the next window ends, or `None` if no line is tracked.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.next_due
    }

    /// Returns every summary not yet given, whether or not its window ended. The logger's flush
    /// calls it at exit.
    pub(crate) fn drain(&mut self, now: Instant) -> Vec<Summary> {
        let out = std::mem::take(&mut self.lines)
            .into_iter()
            .filter(|(_, e)| e.held > 0)
            .map(|(key, e)| Summary {
                key,
                sample: e.sample,
                held: e.held,
                span: now.saturating_duration_since(e.since),
            })
            .collect();
        self.next_due = None;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(site: &str) -> LineKey {
        LineKey { level: log::Level::Error, target: "t".into(), site: site.into() }
    }

    /// Logs `key` `n` times at `at`, with its site as the text. Returns how many lines passed.
    fn flood(l: &mut RepeatLimiter, key: &LineKey, n: u32, at: Instant) -> u32 {
        (0..n).filter(|_| l.admit(key, &key.site, at) == Verdict::Pass).count() as u32
    }

    #[test]
    fn i12_a_burst_passes_then_one_summary_per_second_while_the_flood_lasts() {
        let (mut l, t0, k) = (RepeatLimiter::new(), Instant::now(), key("errno: 95"));
        let ms = |n: u64| t0 + Duration::from_millis(n);
        assert_eq!(flood(&mut l, &k, 1000, t0), BURST, "the burst passes, the rest is held");
        assert!(l.due(ms(999)).is_empty(), "nothing before the second is over");
        assert_eq!(flood(&mut l, &k, 500, ms(999)), 0);
        let s = l.due(ms(1000));
        assert_eq!(
            s,
            [Summary { key: k.clone(), sample: k.site.clone(), held: 1000 - u64::from(BURST) + 500, span: WINDOW }]
        );
        assert_eq!(s[0].text(), "errno: 95 [1490 more like this in the last 1.0 s]");
        // The flood goes on: no new burst, one summary per window.
        for second in 1..5u64 {
            assert_eq!(flood(&mut l, &k, 300, ms(second * 1000 + 10)), 0, "second {second}");
            assert!(l.due(ms(second * 1000 + 999)).is_empty());
            let s = l.due(ms((second + 1) * 1000));
            assert_eq!(s.len(), 1);
            assert_eq!(s[0].held, 300);
        }
        // A second without the line ends the limiting; the next one starts a new burst.
        assert!(l.due(ms(6000)).is_empty(), "nothing held in the last second: no summary");
        assert_eq!(flood(&mut l, &k, 20, ms(6001)), BURST);
    }

    #[test]
    fn i12_the_first_line_held_in_a_window_says_so() {
        let (mut l, t0, k) = (RepeatLimiter::new(), Instant::now(), key("again"));
        assert_eq!(flood(&mut l, &k, BURST, t0), BURST);
        assert_eq!(l.admit(&k, "x", t0), Verdict::HoldFirst);
        assert_eq!(l.admit(&k, "x", t0), Verdict::Hold);
        assert_eq!(l.due(t0 + WINDOW).len(), 1);
        // The flood goes on into the next window: its first held line wakes the writer again.
        assert_eq!(l.admit(&k, "x", t0 + WINDOW), Verdict::HoldFirst);
        assert_eq!(l.admit(&k, "x", t0 + WINDOW), Verdict::Hold);
    }

    #[test]
    fn i12_lines_differing_in_text_level_or_target_are_counted_apart() {
        let (mut l, t0) = (RepeatLimiter::new(), Instant::now());
        let a = key("a");
        let warn = LineKey { level: log::Level::Warn, ..a.clone() };
        let other = LineKey { target: "other".into(), ..a.clone() };
        for k in [&a, &warn, &other, &key("b")] {
            assert_eq!(flood(&mut l, k, BURST + 5, t0), BURST);
        }
        let s = l.due(t0 + WINDOW);
        assert_eq!(s.len(), 4);
        assert!(s.iter().all(|s| s.held == 5));
    }

    #[test]
    fn lines_of_one_site_with_different_texts_are_one_kind_and_the_summary_shows_the_last() {
        let (mut l, t0, k) = (RepeatLimiter::new(), Instant::now(), key("shm/src/meta.rs:120"));
        let passed =
            (0..100_000u32).filter(|i| l.admit(&k, &format!("refused frame: ticket {i}"), t0) == Verdict::Pass).count();
        assert_eq!(passed, BURST as usize, "a flood of varying text costs the burst only");
        let s = l.due(t0 + WINDOW);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].text(), "refused frame: ticket 99999 [99990 more like this in the last 1.0 s]");
    }

    #[test]
    fn i12_lines_below_the_burst_are_never_held_and_are_forgotten() {
        let (mut l, t0) = (RepeatLimiter::new(), Instant::now());
        for second in 0..10u32 {
            let at = t0 + WINDOW * second;
            assert!(l.due(at).is_empty());
            assert_eq!(flood(&mut l, &key("rate"), BURST, at), BURST, "a line BURST times a second always passes");
        }
        let _ = l.due(t0 + WINDOW * 11);
        assert!(l.lines.is_empty(), "quiet lines are forgotten");
    }

    #[test]
    fn i12_at_most_tracked_lines_are_kept_and_drain_gives_what_is_left() {
        let (mut l, t0) = (RepeatLimiter::new(), Instant::now());
        for i in 0..TRACKED + 10 {
            assert!(l.admit(&key(&i.to_string()), "x", t0) == Verdict::Pass);
        }
        assert_eq!(l.lines.len(), TRACKED);
        let k = key("0");
        flood(&mut l, &k, BURST + 3, t0);
        let left = l.drain(t0 + Duration::from_millis(250));
        assert_eq!(left, [Summary { key: k, sample: "0".into(), held: 4, span: Duration::from_millis(250) }]);
        assert!(l.lines.is_empty() && l.due(t0 + WINDOW * 2).is_empty());
    }
}
