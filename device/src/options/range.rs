//! The values a numeric option accepts: [`Range`].
//!
//! A numeric option accepts the values of its kind; a C++ `int`, for example, is 32 bits. Some
//! options accept fewer, where a value beyond would crash or stall a device:
//! `--io-threads 100000000` made libzmq abort, and a segment size beyond `off_t` failed deep
//! inside with "out of range integral type conversion attempted". Every option is checked the
//! same way, when the command line is parsed. A refusal names the option and the range.

use super::Kind;
use crate::properties::Value;
use std::fmt;
use std::ops::RangeInclusive;

/// Inclusive bounds of a numeric option.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// Bounds for integers, of any integer kind.
    Int {
        /// Smallest value.
        min: i128,
        /// Largest value.
        max: i128,
    },
    /// Bounds for floating-point numbers.
    Float {
        /// Smallest value.
        min: f64,
        /// Largest value.
        max: f64,
    },
}

impl From<RangeInclusive<i64>> for Range {
    fn from(r: RangeInclusive<i64>) -> Range {
        Range::Int { min: i128::from(*r.start()), max: i128::from(*r.end()) }
    }
}

impl From<RangeInclusive<u64>> for Range {
    fn from(r: RangeInclusive<u64>) -> Range {
        Range::Int { min: i128::from(*r.start()), max: i128::from(*r.end()) }
    }
}

impl From<RangeInclusive<f64>> for Range {
    fn from(r: RangeInclusive<f64>) -> Range {
        Range::Float { min: *r.start(), max: *r.end() }
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Range::Int { min, max } => write!(f, "{min} to {max}"),
            Range::Float { min, max } => write!(f, "{min} to {max}"),
        }
    }
}

impl Range {
    /// Returns the part of `self` that lies within `outer`, so that a declared range never widens
    /// the kind's own range.
    fn within(self, outer: Range) -> Range {
        match (self, outer) {
            (Range::Int { min, max }, Range::Int { min: lo, max: hi }) => {
                Range::Int { min: min.max(lo), max: max.min(hi) }
            }
            (Range::Float { min, max }, Range::Float { min: lo, max: hi }) => {
                Range::Float { min: min.max(lo), max: max.min(hi) }
            }
            _ => outer, // a range of the other sort does not apply
        }
    }
}

/// Why a text is not a valid value of an option.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Refusal {
    /// The text is not of the option's kind at all, such as `fast` for a number.
    Invalid,
    /// The text is a number, but outside the range that the option accepts.
    OutOfRange(Range),
}

impl Kind {
    /// Returns the range of values that the kind itself can hold, or `None` for texts and
    /// booleans.
    pub fn range(self) -> Option<Range> {
        Some(match self {
            Kind::Int => (i64::from(i32::MIN)..=i64::from(i32::MAX)).into(),
            Kind::U16 => (0..=u64::from(u16::MAX)).into(),
            Kind::U64 => (0..=u64::MAX).into(),
            Kind::Size => (0..=usize::MAX as u64).into(),
            Kind::Float => (-f64::from(f32::MAX)..=f64::from(f32::MAX)).into(),
            Kind::Str | Kind::Bool | Kind::Flag | Kind::Strings => return None,
        })
    }

    /// Converts `text` to a value of this kind. A `declared` range narrows the kind's own range:
    /// the value must lie within both.
    pub(crate) fn parse_within(self, text: &str, declared: Option<Range>) -> Result<Value, Refusal> {
        let Some(own) = self.range() else { return self.parse_other(text).ok_or(Refusal::Invalid) };
        let range = declared.map_or(own, |d| d.within(own));
        match range {
            Range::Int { min, max } => {
                let n: i128 = text.parse().map_err(|_| Refusal::Invalid)?;
                if n < min || n > max {
                    return Err(Refusal::OutOfRange(range));
                }
                // `n` lies within the kind's range, so the conversions below are exact.
                Ok(match self {
                    Kind::Int => Value::Int(n as i64),
                    _ => Value::UInt(n as u64),
                })
            }
            Range::Float { min, max } => {
                let x: f64 = text.parse().map_err(|_| Refusal::Invalid)?;
                if x.is_nan() {
                    return Err(Refusal::Invalid);
                }
                if x < min || x > max {
                    return Err(Refusal::OutOfRange(range));
                }
                Ok(Value::Float(f64::from(x as f32)))
            }
        }
    }

    fn parse_other(self, text: &str) -> Option<Value> {
        Some(match self {
            Kind::Str => Value::Str(text.to_owned()),
            Kind::Bool | Kind::Flag => Value::Bool(super::parse_bool(text)?),
            Kind::Strings => Value::Strings(vec![text.to_owned()]),
            Kind::Int | Kind::U16 | Kind::U64 | Kind::Size | Kind::Float => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i14_each_kind_keeps_to_its_own_range_and_a_declared_one_narrows_it() {
        assert_eq!(Kind::Int.parse_within("-2147483648", None), Ok(Value::Int(i64::from(i32::MIN))));
        assert_eq!(
            Kind::Int.parse_within("2147483648", None),
            Err(Refusal::OutOfRange(Range::Int { min: i32::MIN.into(), max: i32::MAX.into() }))
        );
        assert!(matches!(Kind::U16.parse_within("-1", None), Err(Refusal::OutOfRange(_))));
        assert!(matches!(Kind::U64.parse_within("18446744073709551616", None), Err(Refusal::OutOfRange(_))));
        assert_eq!(Kind::U64.parse_within("18446744073709551615", None), Ok(Value::UInt(u64::MAX)));
        assert_eq!(Kind::Int.parse_within("fast", None), Err(Refusal::Invalid));
        assert_eq!(Kind::Int.parse_within("1.5", None), Err(Refusal::Invalid));
        let io = Some(Range::from(1i64..=64));
        assert_eq!(Kind::Int.parse_within("64", io), Ok(Value::Int(64)));
        assert_eq!(Kind::Int.parse_within("100000000", io), Err(Refusal::OutOfRange(Range::Int { min: 1, max: 64 })));
        // A declared range wider than the kind is cut to the kind.
        let wide = Some(Range::from(0..=u64::MAX));
        assert_eq!(Kind::U16.parse_within("70000", wide), Err(Refusal::OutOfRange(Range::Int { min: 0, max: 65535 })));
        assert!(matches!(Kind::Float.parse_within("1e40", None), Err(Refusal::OutOfRange(_))));
        assert!(matches!(Kind::Float.parse_within("inf", None), Err(Refusal::OutOfRange(_))));
        assert_eq!(Kind::Float.parse_within("NaN", None), Err(Refusal::Invalid));
        assert!(matches!(Kind::Float.parse_within("-1", Some((0.0..=1e9).into())), Err(Refusal::OutOfRange(_))));
        assert_eq!(Kind::Float.parse_within("2.5", None), Ok(Value::Float(2.5)));
        assert_eq!(Range::from(1i64..=64).to_string(), "1 to 64");
    }
}
