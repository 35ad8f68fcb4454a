//! The configuration store: [`Properties`] (FairMQ's `ProgOptions`), typed values by key.
//!
//! The device, its controller and its plugins share one [`Properties`]. Its keys are option
//! names (`id`, `transport`, ...) and channel properties (`chans.<name>.<index>.<property>`).
//!
//! - A [`Value`] keeps the type it was set with.
//! - [`Properties::get`] reads a value as any type that implements [`FromValue`]. An integer
//!   converts to another integer type when it fits, and to a floating-point type. (FairMQ
//!   insists on the exact C++ type, but a Rust user expects a small number to read as `u64` and
//!   as `i32` alike.) A value that does not convert is a [`PropertyError`].
//! - [`Properties::subscribe`] calls a callback on every set or update, in the thread that sets
//!   the value.

use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A property value, which keeps its type.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Text.
    Str(String),
    /// `true`/`false`.
    Bool(bool),
    /// Signed integer.
    Int(i64),
    /// Unsigned integer.
    UInt(u64),
    /// Floating point.
    Float(f64),
    /// A list of texts, such as the value of `--channel-config`.
    Strings(Vec<String>),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::UInt(u) => write!(f, "{u}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Strings(v) => f.write_str(&v.join(", ")),
        }
    }
}

/// A type that `Properties::get` can read a property value as.
pub trait FromValue: Sized {
    /// Returns the value as `Self`, if the value has that type or converts to it without loss.
    fn from_value(v: &Value) -> Option<Self>;
}

macro_rules! int_from_value {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: &Value) -> Option<$t> {
                match v {
                    Value::Int(i) => <$t>::try_from(*i).ok(),
                    Value::UInt(u) => <$t>::try_from(*u).ok(),
                    _ => None,
                }
            }
        }
        impl From<$t> for Value {
            #[allow(clippy::cast_lossless, unused_comparisons)]
            fn from(x: $t) -> Value {
                match i64::try_from(x) {
                    Ok(i) => Value::Int(i),
                    Err(_) => Value::UInt(x as u64),
                }
            }
        }
    )*};
}
int_from_value!(i8, i16, i32, i64, u8, u16, u32, u64, usize, isize);

impl FromValue for f64 {
    fn from_value(v: &Value) -> Option<f64> {
        match v {
            Value::Float(x) => Some(*x),
            Value::Int(i) => Some(*i as f64),
            Value::UInt(u) => Some(*u as f64),
            _ => None,
        }
    }
}
impl FromValue for f32 {
    fn from_value(v: &Value) -> Option<f32> {
        f64::from_value(v).map(|x| x as f32)
    }
}
impl FromValue for bool {
    fn from_value(v: &Value) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}
impl FromValue for String {
    fn from_value(v: &Value) -> Option<String> {
        match v {
            Value::Str(s) => Some(s.clone()),
            _ => None,
        }
    }
}
impl FromValue for Vec<String> {
    fn from_value(v: &Value) -> Option<Vec<String>> {
        match v {
            Value::Strings(s) => Some(s.clone()),
            Value::Str(s) => Some(vec![s.clone()]),
            _ => None,
        }
    }
}
impl From<f64> for Value {
    fn from(x: f64) -> Value {
        Value::Float(x)
    }
}
impl From<f32> for Value {
    fn from(x: f32) -> Value {
        Value::Float(f64::from(x))
    }
}
impl From<bool> for Value {
    fn from(x: bool) -> Value {
        Value::Bool(x)
    }
}
impl From<String> for Value {
    fn from(x: String) -> Value {
        Value::Str(x)
    }
}
impl From<&str> for Value {
    fn from(x: &str) -> Value {
        Value::Str(x.to_owned())
    }
}
impl From<Vec<String>> for Value {
    fn from(x: Vec<String>) -> Value {
        Value::Strings(x)
    }
}

/// The reason why reading a property failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PropertyError {
    /// The key is not set.
    #[error("Config has no key: {0}")]
    NotFound(String),
    /// The value has a type that does not convert to the type asked for.
    #[error("property '{key}' holds {value:?}, which is not a {wanted}")]
    Type {
        /// The key.
        key: String,
        /// The stored value.
        value: Value,
        /// The type asked for.
        wanted: &'static str,
    },
}

type Subscriber = Arc<dyn Fn(&str, &Value) + Send + Sync>;

/// The configuration store. The device, its controller and its plugins share one store through
/// an `Arc`. Any thread may use it.
#[derive(Default)]
pub struct Properties {
    map: RwLock<BTreeMap<String, Value>>,
    subscribers: Mutex<Vec<(String, Subscriber)>>,
}

impl fmt::Debug for Properties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Properties").field("keys", &self.map.read().len()).finish()
    }
}

impl Properties {
    /// Creates an empty store.
    pub fn new() -> Arc<Properties> {
        Arc::new(Properties::default())
    }

    /// Returns the value of `key` as `T`.
    pub fn get<T: FromValue>(&self, key: &str) -> Result<T, PropertyError> {
        let map = self.map.read();
        let v = map.get(key).ok_or_else(|| PropertyError::NotFound(key.to_owned()))?;
        T::from_value(v).ok_or_else(|| PropertyError::Type {
            key: key.to_owned(),
            value: v.clone(),
            wanted: std::any::type_name::<T>(),
        })
    }

    /// Returns the value of `key` as `T`, or `default` if the key is not set. A value that does not
    /// convert to `T` is still an error.
    pub fn get_or<T: FromValue>(&self, key: &str, default: T) -> Result<T, PropertyError> {
        match self.get(key) {
            Err(PropertyError::NotFound(_)) => Ok(default),
            other => other,
        }
    }

    /// Returns the value of `key` with the type it was set with, or `None` if the key is not set.
    pub fn value(&self, key: &str) -> Option<Value> {
        self.map.read().get(key).cloned()
    }

    /// Returns the value of `key` as text, whatever its type.
    pub fn get_as_string(&self, key: &str) -> Result<String, PropertyError> {
        self.value(key).map(|v| v.to_string()).ok_or_else(|| PropertyError::NotFound(key.to_owned()))
    }

    /// Whether `key` is set.
    pub fn exists(&self, key: &str) -> bool {
        self.map.read().contains_key(key)
    }

    /// Sets `key` to `value`, whether the key exists or not, and calls the subscribers.
    pub fn set(&self, key: &str, value: impl Into<Value>) {
        let value = value.into();
        self.map.write().insert(key.to_owned(), value.clone());
        self.emit(key, &value);
    }

    /// Sets `key` to `value` only if the key exists, and then calls the subscribers. Returns
    /// whether the key existed.
    pub fn update(&self, key: &str, value: impl Into<Value>) -> bool {
        let value = value.into();
        {
            let mut map = self.map.write();
            match map.get_mut(key) {
                Some(v) => *v = value.clone(),
                None => {
                    log::debug!("UpdateProperty failed, no property found with key '{key}'");
                    return false;
                }
            }
        }
        self.emit(key, &value);
        true
    }

    /// Sets many keys, each as `Properties::set` does.
    pub fn set_all(&self, values: impl IntoIterator<Item = (String, Value)>) {
        for (k, v) in values {
            self.set(&k, v);
        }
    }

    /// Removes `key`. The subscribers are not called.
    pub fn delete(&self, key: &str) {
        self.map.write().remove(key);
    }

    /// Removes every key that starts with `prefix`. The subscribers are not called.
    pub fn delete_starting_with(&self, prefix: &str) {
        self.map.write().retain(|k, _| !k.starts_with(prefix));
    }

    /// Every key, sorted.
    pub fn keys(&self) -> Vec<String> {
        self.map.read().keys().cloned().collect()
    }

    /// Returns every key that starts with `prefix`, with its value.
    pub fn starting_with(&self, prefix: &str) -> BTreeMap<String, Value> {
        self.map
            .read()
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Maps each channel name to its number of sub-channels, as FairMQ's `GetChannelInfo` does.
    /// The count is the number of `chans.<name>.<i>.type` keys.
    pub fn channel_info(&self) -> BTreeMap<String, usize> {
        let mut info = BTreeMap::new();
        for k in self.map.read().keys() {
            if let Some(rest) = k.strip_prefix("chans.") {
                let mut parts = rest.rsplitn(3, '.');
                if let (Some("type"), Some(_index), Some(name)) = (parts.next(), parts.next(), parts.next()) {
                    *info.entry(name.to_owned()).or_insert(0) += 1;
                }
            }
        }
        info
    }

    /// Calls `cb(key, value)` on every set or update, in the thread that sets the value. Each
    /// subscriber name has one callback: subscribing again under the same name replaces it.
    pub fn subscribe(&self, subscriber: &str, cb: impl Fn(&str, &Value) + Send + Sync + 'static) {
        let mut subs = self.subscribers.lock();
        subs.retain(|(s, _)| s != subscriber);
        subs.push((subscriber.to_owned(), Arc::new(cb)));
    }

    /// Removes the callback of `subscriber`.
    pub fn unsubscribe(&self, subscriber: &str) {
        self.subscribers.lock().retain(|(s, _)| s != subscriber);
    }

    fn emit(&self, key: &str, value: &Value) {
        let subs: Vec<Subscriber> = self.subscribers.lock().iter().map(|(_, cb)| cb.clone()).collect();
        for cb in subs {
            cb(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn typed_get_set_and_conversions() {
        let p = Properties::new();
        p.set("max-iterations", 5u64);
        p.set("rate", 1.5f32);
        p.set("id", "sampler1");
        p.set("color", true);
        assert_eq!(p.get::<u64>("max-iterations").unwrap(), 5);
        assert_eq!(p.get::<i32>("max-iterations").unwrap(), 5, "small integers convert");
        assert_eq!(p.get::<f32>("rate").unwrap(), 1.5);
        assert_eq!(p.get::<String>("id").unwrap(), "sampler1");
        assert!(matches!(p.get::<bool>("id"), Err(PropertyError::Type { .. })));
        assert_eq!(p.get::<i32>("nope"), Err(PropertyError::NotFound("nope".into())));
        assert_eq!(p.get_or::<i32>("nope", 7).unwrap(), 7);
        assert_eq!(p.get_as_string("color").unwrap(), "true");
        p.set("neg", -1i32);
        assert!(p.get::<u32>("neg").is_err(), "no lossy conversion");
        assert!(!p.update("missing", 1));
        assert!(p.update("id", "sampler2"));
    }

    #[test]
    fn subscriptions_and_channel_info() {
        let p = Properties::new();
        let n = Arc::new(AtomicUsize::new(0));
        let n2 = n.clone();
        p.subscribe("test", move |k, _| {
            if k.starts_with("chans.") {
                n2.fetch_add(1, Ordering::SeqCst);
            }
        });
        p.set("chans.data.0.type", "push");
        p.set("chans.data.1.type", "push");
        p.set("chans.ctl.0.type", "pair");
        p.set("chans.data.0.address", "tcp://*:5555");
        assert_eq!(n.load(Ordering::SeqCst), 4);
        p.unsubscribe("test");
        p.set("chans.x.0.type", "pull");
        assert_eq!(n.load(Ordering::SeqCst), 4);
        let info = p.channel_info();
        assert_eq!(info.get("data"), Some(&2));
        assert_eq!(info.get("ctl"), Some(&1));
        assert_eq!(p.starting_with("chans.data.0.").len(), 2);
    }
}
