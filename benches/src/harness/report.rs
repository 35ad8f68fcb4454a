//! Numbers to text: summaries of repeated runs and the markdown tables the harness prints.

/// Median and range of repeated measurements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Median (the upper one of an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// How many values.
    pub n: usize,
}

impl Summary {
    /// The summary of `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        Some(Summary { median: *v.get(v.len() / 2)?, min: v[0], max: v[v.len() - 1], n: v.len() })
    }

    /// `median (min-max)` with `unit` formatting each value; the range only for several runs.
    pub fn show(&self, unit: fn(f64) -> String) -> String {
        if self.n > 1 {
            format!("{} ({}-{})", unit(self.median), unit(self.min), unit(self.max))
        } else {
            unit(self.median)
        }
    }
}

/// `3.69 M`, `706.5 k`, `201`: a rate with a metric prefix.
pub fn rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1} k", r / 1e3)
    } else {
        format!("{r:.0}")
    }
}

/// Bytes per second as GB/s (10^9).
pub fn gbps(bytes_per_s: f64) -> String {
    format!("{:.2}", bytes_per_s / 1e9)
}

/// `640 ns`, `99.1 us`, `1.20 ms`.
pub fn duration_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} us", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// `64 B`, `1 KiB`, `16 MiB`.
pub fn size(n: usize) -> String {
    match n {
        n if n >= 1 << 30 && n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

/// A ratio to the reference system, or `-` when either side is missing.
pub fn ratio(value: Option<f64>, reference: Option<f64>) -> String {
    match (value, reference) {
        (Some(v), Some(r)) if r > 0.0 => format!("{:.2}", v / r),
        _ => "-".into(),
    }
}

/// Prints a markdown table header.
pub fn header<S: AsRef<str>>(columns: &[S]) {
    let columns: Vec<&str> = columns.iter().map(AsRef::as_ref).collect();
    println!("| {} |", columns.join(" | "));
    println!("|{}", "---|".repeat(columns.len()));
}

/// Prints a markdown table row (flushed at once: a long run shows its progress).
pub fn row(cells: &[String]) {
    use std::io::Write;
    println!("| {} |", cells.join(" | "));
    let _ = std::io::stdout().flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(rate(3_690_000.0), "3.69 M");
        assert_eq!(rate(706_500.0), "706.5 k");
        assert_eq!(rate(201.0), "201");
        assert_eq!(size(64), "64 B");
        assert_eq!(size(1024), "1 KiB");
        assert_eq!(size(16 << 20), "16 MiB");
        assert_eq!(size(1500), "1500 B");
        assert_eq!(duration_ns(640.0), "640 ns");
        assert_eq!(duration_ns(99_100.0), "99.1 us");
        assert_eq!(ratio(Some(1.0), Some(2.0)), "0.50");
        assert_eq!(ratio(None, Some(2.0)), "-");
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(s.show(|v| format!("{v}")), "2 (1-3)");
        assert!(Summary::of(&[]).is_none());
    }
}
