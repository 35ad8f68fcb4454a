//! Writing metric families at scrape time through prometheus-client's encoders: a family's
//! descriptor (name, help, unit, kind), then one sample per label set. Names are given without
//! the `fairmq_` prefix, the unit and `_total`: the encoders add them.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use std::fmt;

/// A sample's labels: (name, value) pairs.
pub(crate) type Labels = Vec<(&'static str, String)>;

/// A sample's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    Int(u64),
    Float(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}

/// Whether a family is a counter, which only ever grows, or a gauge, which measures a current
/// value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
}

/// A family's descriptor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    /// Whether the family is in bytes. If so, the name gets `_bytes`.
    pub bytes: bool,
    /// Whether the family is in seconds. If so, the name gets `_seconds`.
    pub seconds: bool,
}

impl Family {
    pub(crate) const fn counter(name: &'static str, help: &'static str) -> Family {
        Family { name, help, kind: Kind::Counter, bytes: false, seconds: false }
    }

    pub(crate) const fn gauge(name: &'static str, help: &'static str) -> Family {
        Family { name, help, kind: Kind::Gauge, bytes: false, seconds: false }
    }

    /// The same family, in bytes.
    pub(crate) const fn in_bytes(self) -> Family {
        Family { bytes: true, ..self }
    }

    /// The same family, in seconds.
    pub(crate) const fn in_seconds(self) -> Family {
        Family { seconds: true, ..self }
    }

    /// Writes the family's descriptor and its samples. A family without samples is written too,
    /// because its help and type say what would be measured.
    pub(crate) fn write(
        &self,
        enc: &mut DescriptorEncoder<'_>,
        samples: impl IntoIterator<Item = (Labels, Value)>,
    ) -> fmt::Result {
        let unit = match (self.bytes, self.seconds) {
            (true, _) => Some(Unit::Bytes),
            (_, true) => Some(Unit::Seconds),
            _ => None,
        };
        let ty = match self.kind {
            Kind::Counter => MetricType::Counter,
            Kind::Gauge => MetricType::Gauge,
        };
        let mut m = enc.encode_descriptor(self.name, self.help, unit.as_ref(), ty)?;
        for (labels, v) in samples {
            let e = m.encode_family(&labels)?;
            match (self.kind, v) {
                (Kind::Counter, Value::Int(n)) => ConstCounter::new(n).encode(e)?,
                (Kind::Counter, Value::Float(x)) => ConstCounter::new(x).encode(e)?,
                (Kind::Gauge, Value::Int(n)) => ConstGauge::new(n).encode(e)?,
                (Kind::Gauge, Value::Float(x)) => ConstGauge::new(x).encode(e)?,
            }
        }
        Ok(())
    }
}
