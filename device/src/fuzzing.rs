//! Entry points for the fuzz targets in `fuzz/`, and for the test that replays their corpora
//! (`tests/fuzz_corpus.rs`).
//!
//! The module exists only with the cargo feature `fuzzing`. It is not part of the API: it is
//! hidden, and it may change at any time.
//!
//! Each entry point ([`channel_config`], [`mq_config`], [`command_line`], [`metrics_request`])
//! takes arbitrary bytes. It hands them to the code that reads a user's configuration, or a
//! scraper's request. It panics only when an invariant breaks. The configuration targets skip
//! input that is not UTF-8, because a configuration arrives as Rust strings. The request target
//! takes the bytes as they are.

use crate::channel::ChannelConfig;
use crate::channel_parsers::{parse_channel_config, parse_json};
use crate::logging::{Severity, Verbosity};
use crate::options;
use crate::properties::Properties;
use std::collections::BTreeMap;

/// Target `channel_config`: the input holds `--channel-config` tokens, one per line.
pub fn channel_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let tokens: Vec<String> = text.lines().map(str::to_owned).collect();
    if let Ok(channels) = parse_channel_config(&tokens) {
        check_channels(&channels);
    }
}

/// Target `mq_config`: the input is a JSON `--mq-config` file. Its first line is the device id to
/// look up, and the rest is the file's text.
pub fn mq_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (id, json) = text.split_once('\n').unwrap_or((text, ""));
    if let Ok(channels) = parse_json(json, id) {
        check_channels(&channels);
    }
}

/// Target `command_line`: the input holds a device's arguments, without the program name,
/// separated by NUL bytes. The target parses them with the standard options. Then it does what a
/// device does next with them: it builds the help and the option dump, reads the log settings, and
/// parses the channels of `--channel-config`.
pub fn command_line(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let args: Vec<String> = if text.is_empty() { Vec::new() } else { text.split('\0').map(str::to_owned).collect() };
    let mut opts = options::standard();
    let props = Properties::new();
    if opts.parse(&args, &props).is_err() {
        return;
    }
    let _ = opts.check_required(&props);
    let _ = opts.help();
    let _ = opts.print_options(&props);
    let _ = opts.configuration_dump(&props);
    for key in ["severity", "file-severity"] {
        let _ = props.get_or::<String>(key, String::new()).map(|s| s.parse::<Severity>());
    }
    let _ = props.get_or::<String>("verbosity", String::new()).map(|s| s.parse::<Verbosity>());
    if let Ok(tokens) = props.get::<Vec<String>>("channel-config") {
        if let Ok(channels) = parse_channel_config(&tokens) {
            check_channels(&channels);
        }
    }
}

/// The most sub-channels for which the round trip through the properties is checked.
const ROUND_TRIP_MAX: usize = 64;

/// Does with parsed channels what the device does: validates them, stores them in properties, and
/// builds them again from there. The round trip through the properties must give back the same
/// sub-channels. When a name and index repeat, the last one given wins.
fn check_channels(channels: &[ChannelConfig]) {
    for c in channels {
        let _ = c.validate();
        let _ = (c.socket_options(), c.attach_options());
    }
    // Under the fuzzer's instrumentation, the round trip costs about 0.3 ms per sub-channel,
    // because every key comparison is traced. A thousand sub-channels from one `numSockets` would
    // slow fuzzing to a crawl without reaching any other code.
    if channels.len() > ROUND_TRIP_MAX {
        return;
    }
    let props = Properties::new();
    let mut expected = BTreeMap::new();
    for c in channels {
        c.write_to(&props);
        expected.insert((c.prefix.clone(), c.index), c);
    }
    // A dot in a name makes one channel's keys a prefix of another's (`a` and `a.0`). Validation
    // refuses such names before any channel is built, so the round trip is not checked for them.
    let dotted = channels.iter().any(|c| c.prefix.contains('.'));
    let mut found = 0;
    for (name, count) in props.channel_info() {
        for index in 0..count {
            let back = ChannelConfig::from_properties(&props, &name, index)
                .unwrap_or_else(|e| panic!("channel {name}[{index}] cannot be read back: {e}"));
            if !dotted {
                assert_eq!(Some(&&back), expected.get(&(name.clone(), index)), "channel {name}[{index}]");
            }
            found += 1;
        }
    }
    assert_eq!(found, expected.len(), "sub-channels lost or invented on the way through the properties");
}

/// Target `metrics_request`: the input is what a client sends the metrics endpoint. The target
/// reads it as the endpoint's server reads a request head.
///
/// Every answer must be a whole HTTP response whose `Content-Length` is the length of its body. A
/// response to HEAD has no body. The server may give no answer only while the head may still be
/// incomplete, that is, while the head is within its size limit.
pub fn metrics_request(data: &[u8]) {
    use crate::metrics::http::{respond, MAX_HEAD, TEXT};
    let body = "fairmq_device_state 1\n";
    let Some(out) = respond(data, &|_| (200, TEXT, body.to_owned())) else {
        assert!(data.len() <= MAX_HEAD, "a head past the limit is answered (431)");
        return;
    };
    let text = String::from_utf8(out).expect("responses are text");
    let (head, rest) = text.split_once("\r\n\r\n").expect("a head and a body");
    assert!(head.starts_with("HTTP/1.1 "), "{head}");
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("a Content-Length")
        .parse()
        .expect("a number");
    assert!(rest.is_empty() || rest.len() == length, "{head}: a body of {} bytes", rest.len());
}
