//! Reading channel configurations: `--channel-config` tokens and `--mq-config` JSON files, both
//! in FairMQ's formats.
//!
//! Each parser returns one [`ChannelConfig`] per sub-channel. The device writes them into its
//! properties in INITIALIZING DEVICE.
//!
//! - [`parse_channel_config`] reads `--channel-config` tokens, one channel per token:
//!   `name=data,type=push,method=bind,address=tcp://*:5555`. Each `address=` adds a sub-channel.
//!   The other keys apply to every sub-channel of the channel.
//! - [`parse_json`] and [`parse_json_file`] read the entry of `fairMQOptions.devices` whose `key`
//!   (or `id`) names the device. Each element of a channel's `sockets` list is a sub-channel with
//!   properties of its own. A `numSockets` gives that many alike sub-channels instead.
//!
//! When both options are given, the device reads only `--mq-config`, as FairMQ does. Both parsers
//! ignore an unknown key with a warning, as FairMQ does. They refuse, with a [`ConfigError`]:
//!
//! - a channel defined twice, in one source or in both sources ([`check_disjoint`]);
//! - a key given twice in one JSON object;
//! - more than [`MAX_SUB_CHANNELS`] sub-channels in a channel, or more than
//!   [`MAX_DEVICE_SUB_CHANNELS`] in a device;
//! - a JSON file larger than 16 MiB.

use crate::channel::{ChannelConfig, PROPERTY_KEYS};
use crate::config_error::ChannelError;
pub use crate::config_error::{ConfigError, MAX_DEVICE_SUB_CHANNELS, MAX_SUB_CHANNELS};
use crate::properties::Value;

/// The largest `--mq-config` file that the parser reads. A topology file has a few kilobytes.
/// The bound keeps a file such as `/dev/zero` from being read until memory runs out.
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// Fails when `out` holds more sub-channels than a device may have.
fn check_total(out: &[ChannelConfig]) -> Result<(), ConfigError> {
    if out.len() > MAX_DEVICE_SUB_CHANNELS {
        return Err(ConfigError::TooManySubChannels);
    }
    Ok(())
}

/// Expands one channel into its sub-channels, as FairMQ's JSON logic does. The channel is given
/// as its common properties, optional per-socket overrides and `numSockets`.
fn expand(
    name: &str,
    common: &[(String, Value)],
    sockets: &[Vec<(String, Value)>],
    num_sockets: usize,
) -> Result<Vec<ChannelConfig>, ConfigError> {
    let base = |index: usize| -> Result<ChannelConfig, ConfigError> {
        let mut c = ChannelConfig::new(name, index);
        for (k, v) in common {
            c.set(k, v)?;
        }
        Ok(c)
    };
    if num_sockets.max(sockets.len()) > MAX_SUB_CHANNELS {
        let requested = num_sockets.max(sockets.len());
        return Err(ConfigError::TooManySockets { channel: name.to_owned(), requested });
    }
    if num_sockets > 0 {
        return (0..num_sockets).map(base).collect();
    }
    if sockets.is_empty() {
        return Ok(vec![base(0)?]);
    }
    sockets
        .iter()
        .enumerate()
        .map(|(i, overrides)| {
            let mut c = base(i)?;
            for (k, v) in overrides {
                c.set(k, v)?;
            }
            Ok(c)
        })
        .collect()
}

/// The channel names that one configuration source has defined so far.
struct Names {
    seen: std::collections::BTreeSet<String>,
    place: &'static str,
}

impl Names {
    fn new(place: &'static str) -> Names {
        Names { seen: Default::default(), place }
    }

    /// Records a channel definition. A name seen before is an error.
    fn add(&mut self, name: &str) -> Result<(), ConfigError> {
        if !self.seen.insert(name.to_owned()) {
            return Err(ConfigError::DuplicateChannel { name: name.to_owned(), place: self.place });
        }
        Ok(())
    }
}

/// Fails when a channel of `first` is also defined in `second`. When both sources are given,
/// FairMQ reads only the first one, so it would silently drop the channel's other definition.
pub fn check_disjoint(
    first: &[ChannelConfig],
    second: &[ChannelConfig],
    place: &'static str,
) -> Result<(), ConfigError> {
    match second.iter().find(|c| first.iter().any(|f| f.prefix == c.prefix)) {
        Some(c) => Err(ConfigError::DuplicateChannel { name: c.prefix.clone(), place }),
        None => Ok(()),
    }
}

/// Parses `--channel-config` tokens, one channel per token: `[name:]key=value,...`.
///
/// Each `address=` starts a sub-channel. The other keys apply to the whole channel. An unknown
/// key is ignored with a warning. The parser reads a token only up to its first space.
pub fn parse_channel_config(tokens: &[String]) -> Result<Vec<ChannelConfig>, ConfigError> {
    let mut out = Vec::new();
    let mut names = Names::new("in --channel-config");
    for token in tokens {
        let token = token.split(' ').next().unwrap_or("");
        let (mut name, body) = match (token.find(':'), token.find('=')) {
            (Some(c), Some(e)) if c < e => (Some(token[..c].to_owned()), &token[c + 1..]),
            (Some(c), None) => (Some(token[..c].to_owned()), &token[c + 1..]),
            _ => (None, token),
        };
        let mut common = Vec::new();
        let mut sockets = Vec::new();
        let mut num_sockets = 0usize;
        for item in body.split(',').filter(|s| !s.is_empty()) {
            let Some((k, v)) = item.split_once('=') else { continue };
            match k {
                "name" => name = Some(v.to_owned()),
                "address" => sockets.push(vec![("address".to_owned(), Value::Str(v.to_owned()))]),
                "numSockets" => {
                    num_sockets = v.parse().map_err(|_| ChannelError::BadValue { key: k.into(), value: v.into() })?;
                }
                k if PROPERTY_KEYS.contains(&k) => common.push((k.to_owned(), Value::Str(v.to_owned()))),
                _ => log::warn!("Ignoring unknown argument in --channel-config: {item}"),
            }
        }
        let name = name.filter(|n| !n.is_empty()).ok_or_else(|| {
            log::error!("missing channel name in argument of option --channel-config");
            ConfigError::MissingName
        })?;
        names.add(&name)?;
        out.extend(expand(&name, &common, &sockets, num_sockets)?);
        check_total(&out)?;
    }
    Ok(out)
}

fn json_value(v: &serde_json::Value) -> Option<Value> {
    Some(match v {
        serde_json::Value::String(s) => Value::Str(s.clone()),
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Str(n.to_string()),
        },
        _ => return None,
    })
}

/// The channel properties of a JSON object. An unknown key is ignored with a warning, as in
/// `--channel-config`.
fn properties_of(name: &str, obj: &serde_json::Map<String, serde_json::Value>) -> Vec<(String, Value)> {
    for k in obj.keys().filter(|k| !PROPERTY_KEYS.contains(&k.as_str()) && !matches!(k.as_str(), "sockets" | "name")) {
        log::warn!("Ignoring unknown key '{k}' of channel '{name}' in --mq-config");
    }
    obj.iter()
        .filter(|(k, _)| PROPERTY_KEYS.contains(&k.as_str()) && *k != "numSockets")
        .filter_map(|(k, v)| json_value(v).map(|v| (k.clone(), v)))
        .collect()
}

/// A JSON document in which no object has the same key twice.
///
/// serde_json alone would silently keep the last value of a repeated key. But a repeated key, as
/// in `"type": "pull", "type": "push"`, is a typo to report, not a choice to make.
struct Strict(serde_json::Value);

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Strict;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Strict, E> {
                Ok(Strict(v.into()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Strict, E> {
                Ok(Strict(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Strict, E> {
                Ok(Strict(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Strict, E> {
                Ok(Strict(serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Strict, E> {
                Ok(Strict(v.into()))
            }
            fn visit_unit<E>(self) -> Result<Strict, E> {
                Ok(Strict(serde_json::Value::Null))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Strict, A::Error> {
                let mut items = Vec::new();
                while let Some(Strict(v)) = a.next_element()? {
                    items.push(v);
                }
                Ok(Strict(items.into()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Strict, A::Error> {
                let mut map = serde_json::Map::new();
                while let Some((k, Strict(v))) = a.next_entry::<String, Strict>()? {
                    if map.contains_key(&k) {
                        return Err(serde::de::Error::custom(format!("key '{k}' given twice in one object")));
                    }
                    map.insert(k, v);
                }
                Ok(Strict(map.into()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Reads the channels of device `id` from a FairMQ JSON configuration. `parse_json` reads every
/// entry of `fairMQOptions.devices` whose `key` equals `id`. An entry without a `key` matches by
/// its `id` field instead.
pub fn parse_json(text: &str, id: &str) -> Result<Vec<ChannelConfig>, ConfigError> {
    if id.is_empty() {
        return Err(ConfigError::NoDeviceId);
    }
    let Strict(root) = serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
    let devices = root
        .get("fairMQOptions")
        .and_then(|o| o.get("devices"))
        .and_then(|d| d.as_array())
        .ok_or_else(|| ConfigError::Json("no fairMQOptions.devices array".into()))?;
    let mut out = Vec::new();
    let mut names = Names::new("in --mq-config");
    let mut found = false;
    for dev in devices {
        let key = dev.get("key").or_else(|| dev.get("id")).and_then(|k| k.as_str());
        if key != Some(id) {
            continue;
        }
        found = true;
        let channels = match dev.get("channels") {
            None => &[][..],
            Some(c) => {
                c.as_array().ok_or_else(|| ConfigError::Json(format!("device {id}: channels is not an array")))?
            }
        };
        for ch in channels {
            let obj = ch.as_object().ok_or_else(|| ConfigError::Json("a channel is not an object".into()))?;
            let name = obj
                .get("name")
                .and_then(|n| n.as_str())
                .filter(|n| !n.is_empty())
                .ok_or_else(|| ConfigError::Json("a channel has no name".into()))?;
            names.add(name)?;
            let num_sockets = match obj.get("numSockets") {
                None => 0,
                Some(v) => json_value(v)
                    .and_then(|v| match v {
                        Value::Int(i) => usize::try_from(i).ok(),
                        Value::Str(s) => s.parse().ok(),
                        _ => None,
                    })
                    .ok_or_else(|| ConfigError::Json(format!("channel {name}: bad numSockets")))?,
            };
            let sockets = match obj.get("sockets") {
                None => Vec::new(),
                Some(s) => s
                    .as_array()
                    .ok_or_else(|| ConfigError::Json(format!("channel {name}: sockets is not an array")))?
                    .iter()
                    .map(|s| s.as_object().map(|o| properties_of(name, o)))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| ConfigError::Json(format!("channel {name}: a socket is not an object")))?,
            };
            out.extend(expand(name, &properties_of(name, obj), &sockets, num_sockets)?);
            check_total(&out)?;
        }
    }
    if !found {
        return Err(ConfigError::NoSuchDevice(id.to_owned()));
    }
    Ok(out)
}

/// Reads a JSON configuration file. A parse error's message names the file.
pub fn parse_json_file(path: &str, id: &str) -> Result<Vec<ChannelConfig>, ConfigError> {
    let io = |source| ConfigError::Io { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    // Read only a regular file, and only up to a bound. Then neither a FIFO that never ends nor
    // /dev/zero can keep the parser reading.
    if !file.metadata().map_err(io)?.is_file() {
        return Err(ConfigError::Json(format!("{path}: not a regular file")));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_CONFIG_BYTES + 1), &mut text).map_err(io)?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::Json(format!("{path}: larger than {MAX_CONFIG_BYTES} bytes")));
    }
    parse_json(&text, id).map_err(|e| match e {
        ConfigError::Json(m) => ConfigError::Json(format!("{path}: {m}")),
        ConfigError::NoSuchDevice(id) => ConfigError::Json(format!("{path}: no device with key or id '{id}'")),
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &[&str]) -> Vec<String> {
        s.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn channel_config_strings() {
        let c = parse_channel_config(&toks(&["name=data,type=push,method=bind,address=tcp://*:5555,rateLogging=0"]))
            .unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(
            (c[0].name(), c[0].ty.as_str(), c[0].address.as_str(), c[0].rate_logging),
            ("data[0]".into(), "push", "tcp://*:5555", 0)
        );
        let c = parse_channel_config(&toks(&["data:type=push,method=bind,address=ipc:///tmp/a,address=ipc:///tmp/b"]))
            .unwrap();
        assert_eq!(
            c.iter().map(|c| (c.name(), c.address.clone())).collect::<Vec<_>>(),
            [("data[0]".to_owned(), "ipc:///tmp/a".to_owned()), ("data[1]".to_owned(), "ipc:///tmp/b".to_owned())]
        );
        let c = parse_channel_config(&toks(&["name=x,type=pull,numSockets=3,address=tcp://a:1"])).unwrap();
        assert_eq!(c.len(), 3);
        assert!(c.iter().all(|c| c.address == "unspecified"));
        let c = parse_channel_config(&toks(&["name=x,type=pull,bogus=1 trailing=ignored"])).unwrap();
        assert_eq!((c.len(), c[0].address.as_str()), (1, "unspecified"));
        assert!(matches!(parse_channel_config(&toks(&["type=push"])), Err(ConfigError::MissingName)));
        assert!(parse_channel_config(&toks(&["name=x,linger=soon"])).is_err());
        assert_eq!(parse_channel_config(&toks(&["name=x,numSockets=1024"])).unwrap().len(), MAX_SUB_CHANNELS);
        assert!(matches!(
            parse_channel_config(&toks(&["name=x,numSockets=10000000000"])),
            Err(ConfigError::TooManySockets { requested: 10_000_000_000, .. })
        ));
        let two = parse_channel_config(&toks(&["name=a,type=pull", "name=b,type=push,linger=1000"])).unwrap();
        assert_eq!(two[1].linger, 1000);
    }

    const EXAMPLE: &str = r#"{
      "fairMQOptions": { "devices": [
        { "id": "sampler1", "channels": [
          { "name": "data", "type": "push", "method": "bind", "rateLogging": 0,
            "sockets": [ { "address": "tcp://*:5555" }, { "address": "tcp://*:5556", "sndBufSize": 100 } ] } ] },
        { "key": "sink", "id": "ignored", "channels": [
          { "name": "data", "type": "pull", "method": "connect", "address": "tcp://localhost:5555", "linger": "500" } ] },
        { "id": "many", "channels": [ { "name": "out", "type": "push", "method": "bind", "numSockets": 2,
            "sockets": [ { "address": "ignored" } ] } ] }
      ] } }"#;

    #[test]
    fn json_like_fairmq() {
        let s = parse_json(EXAMPLE, "sampler1").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!((s[1].address.as_str(), s[1].snd_buf_size, s[1].rate_logging), ("tcp://*:5556", 100, 0));
        assert_eq!(s[0].snd_buf_size, 1000);
        let k = parse_json(EXAMPLE, "sink").unwrap();
        assert_eq!((k.len(), k[0].address.as_str()), (1, "tcp://localhost:5555"));
        // The `key` field takes precedence over `id`, so no device is named "ignored".
        assert!(matches!(parse_json(EXAMPLE, "ignored"), Err(ConfigError::NoSuchDevice(id)) if id == "ignored"));
        let m = parse_json(EXAMPLE, "many").unwrap();
        assert_eq!(m.len(), 2);
        assert!(m.iter().all(|c| c.address == "unspecified"));
        assert!(matches!(parse_json(EXAMPLE, ""), Err(ConfigError::NoDeviceId)));
        let huge = EXAMPLE.replace(r#""numSockets": 2"#, r#""numSockets": 9223372036854775807"#);
        assert!(matches!(parse_json(&huge, "many"), Err(ConfigError::TooManySockets { .. })));
        assert!(matches!(parse_json("{", "x"), Err(ConfigError::Json(_))));
        assert!(matches!(parse_json("{}", "x"), Err(ConfigError::Json(_))));
    }

    #[test]
    fn i12_a_channel_defined_twice_is_an_error_naming_it() {
        let dup = |r: Result<Vec<ChannelConfig>, ConfigError>| match r {
            Err(ConfigError::DuplicateChannel { name, place }) => format!("{name} {place}"),
            other => panic!("not a duplicate: {other:?}"),
        };
        let pull_push = toks(&["name=data,type=pull,method=bind", "name=data,type=push,method=connect"]);
        assert_eq!(dup(parse_channel_config(&pull_push)), "data in --channel-config");
        let prefixed = toks(&["data:type=pull,method=bind", "name=data,type=push"]);
        assert_eq!(dup(parse_channel_config(&prefixed)), "data in --channel-config");
        let e = parse_channel_config(&pull_push).unwrap_err().to_string();
        assert_eq!(e, "channel 'data' is defined more than once (in --channel-config)");
        let twice = r#"{ "fairMQOptions": { "devices": [ { "id": "d", "channels": [
            { "name": "data", "type": "pull", "method": "bind" }, { "name": "data", "type": "push", "method": "bind" } ] } ] } }"#;
        assert_eq!(dup(parse_json(twice, "d")), "data in --mq-config");
        let two_entries = r#"{ "fairMQOptions": { "devices": [
            { "id": "d", "channels": [ { "name": "data", "type": "pull" } ] },
            { "key": "d", "channels": [ { "name": "data", "type": "push" } ] } ] } }"#;
        assert_eq!(dup(parse_json(two_entries, "d")), "data in --mq-config");
        assert!(matches!(parse_json(two_entries, "other"), Err(ConfigError::NoSuchDevice(_))), "no entry for 'other'");
        let json = parse_json(EXAMPLE, "sampler1").unwrap();
        let cli = parse_channel_config(&toks(&["name=ctrl,type=pair", "name=data,type=push"])).unwrap();
        let e = check_disjoint(&json, &cli, "in --mq-config and in --channel-config").unwrap_err();
        assert_eq!(e.to_string(), "channel 'data' is defined more than once (in --mq-config and in --channel-config)");
        assert!(check_disjoint(&json, &cli[..1], "x").is_ok());
        // Sub-channels of one definition are not duplicates.
        assert_eq!(parse_channel_config(&toks(&["name=x,address=ipc:///a,address=ipc:///b"])).unwrap().len(), 2);
    }

    #[test]
    fn json_that_would_be_misread_in_silence_is_an_error() {
        let json = |channels: &str| {
            format!(r#"{{ "fairMQOptions": {{ "devices": [ {{ "id": "d", "channels": {channels} }} ] }} }}"#)
        };
        let err = |text: &str| parse_json(text, "d").unwrap_err().to_string();
        // A key given twice: serde_json alone would keep the last value.
        assert!(err(&json(r#"[ { "name": "data", "type": "pull", "type": "push" } ]"#)).contains("'type' given twice"));
        assert!(err(&json(r#"[ { "name": "" } ]"#)).contains("has no name"));
        assert!(err(&json(r#"{ "name": "data" }"#)).contains("channels is not an array"));
        assert!(
            err(&json(r#"[ { "name": "data", "sockets": { "address": "x" } } ]"#)).contains("sockets is not an array")
        );
        assert!(
            err(&json(r#"[ { "name": "data", "sockets": [ "tcp://*:1" ] } ]"#)).contains("a socket is not an object")
        );
        // More sockets than a channel may have, more sub-channels than a device may have.
        let sockets = vec![r#"{ "address": "ipc:///x" }"#; MAX_SUB_CHANNELS + 1].join(",");
        let many_sockets = json(&format!(r#"[ {{ "name": "data", "sockets": [ {sockets} ] }} ]"#));
        assert!(matches!(parse_json(&many_sockets, "d"), Err(ConfigError::TooManySockets { requested: 1025, .. })));
        let channels: Vec<String> =
            (0..5).map(|i| format!(r#"{{ "name": "c{i}", "numSockets": {MAX_SUB_CHANNELS} }}"#)).collect();
        let many_channels = json(&format!("[ {} ]", channels.join(",")));
        assert!(matches!(parse_json(&many_channels, "d"), Err(ConfigError::TooManySubChannels)));
        let tokens: Vec<String> = (0..5).map(|i| format!("name=c{i},numSockets={MAX_SUB_CHANNELS}")).collect();
        assert!(matches!(parse_channel_config(&tokens), Err(ConfigError::TooManySubChannels)));
        // Still fine: the largest channel, and keys repeated in different objects.
        let fine = json(&format!(
            r#"[ {{ "name": "a", "type": "pull", "numSockets": {MAX_SUB_CHANNELS} }}, {{ "name": "b", "type": "pull" }} ]"#
        ));
        assert_eq!(parse_json(&fine, "d").unwrap().len(), MAX_SUB_CHANNELS + 1);
    }

    #[test]
    fn a_configuration_file_must_be_a_regular_file_of_sensible_size() {
        let e = parse_json_file("/dev/zero", "d").unwrap_err().to_string();
        assert!(e.contains("/dev/zero: not a regular file"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.json");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_CONFIG_BYTES + 1).unwrap();
        let e = parse_json_file(big.to_str().unwrap(), "d").unwrap_err().to_string();
        assert!(e.contains("larger than"), "{e}");
        let e = parse_json_file(dir.path().to_str().unwrap(), "d").unwrap_err().to_string();
        assert!(e.contains("not a regular file") || e.contains("could not read"), "{e}");
    }
}
