//! Command-line options with FairMQ's names, defaults and parsing rules.
//!
//! - [`standard`] returns FairMQ's general, device and control options, with their defaults.
//! - [`OptionGroup`] is a titled group of options, as `--help` prints it. A program adds its own
//!   options in a group; each option has a [`Kind`], and a numeric one may have a [`Range`].
//! - [`Options`] holds the groups. [`Options::parse`] writes the defaults and then the command
//!   line into the device's [`Properties`].
//!
//! # Parsing rules
//!
//! The rules are those of FairMQ's set-up of Boost.Program_options:
//!
//! - An option is given as `--key value` or `--key=value`. A few have a short form, such as `-h`
//!   and `-v`. Abbreviations are not accepted.
//! - An unknown option is ignored and logged at debug level.
//! - An option that takes a value takes the next token, even when that token starts with `--`.
//! - A flag such as `--print-options` takes no value.
//! - `--channel-config` takes every following token up to the next one that starts with `-`, and
//!   may be given several times. Any other option given twice is an error.
//! - A value outside its option's range is an error that names the option and the range.

use crate::properties::{Properties, Value};
use range::Refusal;
use std::collections::BTreeMap;
use std::fmt::Write as _;

mod range;
pub use range::Range;

/// The type of an option's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Text.
    Str,
    /// A boolean, written `true`, `false`, `1`, `0`, `yes`, `no`, `on` or `off`.
    Bool,
    /// A signed integer (C++ `int`).
    Int,
    /// A 16-bit unsigned integer.
    U16,
    /// A 64-bit unsigned integer (C++ `uint64_t`).
    U64,
    /// A size (C++ `size_t`).
    Size,
    /// A floating-point number (C++ `float`).
    Float,
    /// A list of texts. The option takes several tokens, and may be given several times.
    Strings,
    /// A flag without a value. Giving the flag means true.
    Flag,
}

impl Kind {
    /// The name of the type, as `--print-options` shows it.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Str => "string",
            Kind::Bool | Kind::Flag => "bool",
            Kind::Int => "int",
            Kind::U16 => "unsigned short",
            Kind::U64 => "unsigned long",
            Kind::Size => "unsigned long",
            Kind::Float => "float",
            Kind::Strings => "vector<string>",
        }
    }

    /// Converts a command-line text to a value of this kind. Returns `None` if the text is invalid
    /// or the value lies outside the kind's own range.
    pub fn parse(self, text: &str) -> Option<Value> {
        self.parse_within(text, None).ok()
    }
}

/// Parses Boost's boolean words: `true`, `1`, `yes`, `on` and `false`, `0`, `no`, `off`.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The description of one option.
#[derive(Debug, Clone)]
pub struct OptionSpec {
    /// The long name, without the leading dashes.
    pub name: String,
    /// The one-letter short alias, such as `h` for `-h`.
    pub short: Option<char>,
    /// The type of the value.
    pub kind: Kind,
    /// The default value, which `Options::parse` sets before it reads the command line. Without a
    /// default, the key stays unset unless the command line gives it.
    pub default: Option<Value>,
    /// Help text.
    pub description: String,
    /// Whether the command line must give this option.
    pub required: bool,
    /// The values a numeric option accepts, narrower than those of its kind. `None` means the
    /// kind's own values.
    pub range: Option<Range>,
}

/// A group of options under a title, as `--help` prints them.
#[derive(Debug, Clone)]
pub struct OptionGroup {
    /// Title.
    pub title: String,
    /// Options.
    pub options: Vec<OptionSpec>,
}

impl OptionGroup {
    /// Creates an empty group with the title `title`.
    pub fn new(title: &str) -> Self {
        OptionGroup { title: title.to_owned(), options: Vec::new() }
    }

    /// Adds an option with a default.
    pub fn add(&mut self, name: &str, kind: Kind, default: impl Into<Value>, description: &str) -> &mut Self {
        self.push(name, None, kind, Some(default.into()), description, false)
    }

    /// Adds an option without a default. The key stays unset unless the command line gives it.
    pub fn add_optional(&mut self, name: &str, kind: Kind, description: &str) -> &mut Self {
        self.push(name, None, kind, None, description, false)
    }

    /// Adds a required option.
    pub fn add_required(&mut self, name: &str, kind: Kind, description: &str) -> &mut Self {
        self.push(name, None, kind, None, description, true)
    }

    fn push(
        &mut self,
        name: &str,
        short: Option<char>,
        kind: Kind,
        default: Option<Value>,
        description: &str,
        required: bool,
    ) -> &mut Self {
        self.options.push(OptionSpec {
            name: name.to_owned(),
            short,
            kind,
            default,
            description: description.to_owned(),
            required,
            range: None,
        });
        self
    }

    /// Narrows the values that the option added last accepts. That option must be numeric.
    /// `Options::parse` refuses a value outside `range` with an error that names the option and
    /// the range.
    pub fn within(&mut self, range: impl Into<Range>) -> &mut Self {
        if let Some(o) = self.options.last_mut() {
            o.range = Some(range.into());
        }
        self
    }

    /// Adds an option with a short alias and a default.
    pub fn add_with_short(
        &mut self,
        name: &str,
        short: char,
        kind: Kind,
        default: impl Into<Value>,
        description: &str,
    ) -> &mut Self {
        self.push(name, Some(short), kind, Some(default.into()), description, false)
    }

    /// Adds an option with a short alias and no default. The key stays unset unless the command
    /// line gives it.
    pub fn add_optional_with_short(&mut self, name: &str, short: char, kind: Kind, description: &str) -> &mut Self {
        self.push(name, Some(short), kind, None, description, false)
    }

    /// Adds a flag with a short alias.
    pub fn add_flag_with_short(&mut self, name: &str, short: char, description: &str) -> &mut Self {
        self.push(name, Some(short), Kind::Flag, None, description, false)
    }
}

/// The reason why `Options::parse` or `Options::check_required` refused the command line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionsError {
    /// An option that takes a value has no value after it: it is the last token of the line. An
    /// option that takes a list also has none when the next token starts with `-`.
    #[error("the required argument for option '--{0}' is missing")]
    MissingValue(String),
    /// A value has the wrong form for its option.
    #[error("the argument ('{value}') for option '--{name}' is invalid")]
    InvalidValue {
        /// The option's name.
        name: String,
        /// The text given.
        value: String,
    },
    /// A number lies outside the range that the option accepts.
    #[error("the argument ('{value}') for option '--{name}' is out of range: allowed are {range}")]
    OutOfRange {
        /// The option's name.
        name: String,
        /// The text given.
        value: String,
        /// The range that the option accepts.
        range: Range,
    },
    /// A required option was not given.
    #[error("the option '--{0}' is required but missing")]
    Required(String),
    /// An option that takes a single value was given twice. The message uses Boost's words.
    #[error("option '--{0}' cannot be specified more than once")]
    Repeated(String),
    /// An option was given as `--name=`, with nothing after the equal sign. The message uses
    /// Boost's words.
    #[error("the argument for option '--{0}' should follow immediately after the equal sign")]
    EmptyInline(String),
}

/// The options of a program, in groups.
#[derive(Debug, Clone, Default)]
pub struct Options {
    groups: Vec<OptionGroup>,
    /// The tokens that matched no option. `Options::parse` ignores them, as FairMQ does.
    pub unregistered: Vec<String>,
}

impl Options {
    /// Adds a group.
    pub fn add_group(&mut self, g: OptionGroup) {
        self.groups.push(g);
    }

    fn find(&self, long: Option<&str>, short: Option<char>) -> Option<&OptionSpec> {
        self.groups.iter().flat_map(|g| &g.options).find(|o| match (long, short) {
            (Some(n), _) => o.name == n,
            (None, Some(c)) => o.short == Some(c),
            _ => false,
        })
    }

    /// Removes and returns the group titled `title`.
    pub fn take_group(&mut self, title: &str) -> Option<OptionGroup> {
        let i = self.groups.iter().position(|g| g.title == title)?;
        Some(self.groups.remove(i))
    }

    /// Whether an option of this name exists.
    pub fn has(&self, name: &str) -> bool {
        self.find(Some(name), None).is_some()
    }

    /// The kind of option `name`, if there is one.
    pub fn kind_of(&self, name: &str) -> Option<Kind> {
        self.find(Some(name), None).map(|o| o.kind)
    }

    /// Parses `args` into `props`. `args` does not include the program name. The defaults are set
    /// first, then the values that the command line gives.
    pub fn parse(&mut self, args: &[String], props: &Properties) -> Result<(), OptionsError> {
        for o in self.groups.iter().flat_map(|g| &g.options) {
            if let Some(d) = &o.default {
                props.set(&o.name, d.clone());
            }
        }
        let mut given: BTreeMap<String, Value> = BTreeMap::new();
        let mut i = 0;
        while i < args.len() {
            let tok = &args[i];
            i += 1;
            let (spec, inline) = if let Some(rest) = tok.strip_prefix("--") {
                let (name, inline) = match rest.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_owned())),
                    None => (rest, None),
                };
                (self.find(Some(name), None).cloned(), inline)
            } else if let Some(rest) = tok.strip_prefix('-').filter(|r| !r.is_empty()) {
                let mut chars = rest.chars();
                let c = chars.next().expect("non-empty");
                let tail: String = chars.collect();
                (self.find(None, Some(c)).cloned(), (!tail.is_empty()).then_some(tail))
            } else {
                self.unregistered.push(tok.clone());
                continue;
            };
            let Some(spec) = spec else {
                log::debug!("detected unregistered option: {tok}");
                self.unregistered.push(tok.clone());
                continue;
            };
            if spec.kind != Kind::Strings && given.contains_key(&spec.name) {
                return Err(OptionsError::Repeated(spec.name));
            }
            let texts: Vec<String> = match (spec.kind, inline) {
                (_, Some(v)) if v.is_empty() => return Err(OptionsError::EmptyInline(spec.name)),
                (_, Some(v)) => vec![v],
                (Kind::Flag, None) => vec!["true".into()],
                (Kind::Strings, None) => {
                    let mut v = Vec::new();
                    while i < args.len() && !args[i].starts_with('-') {
                        v.push(args[i].clone());
                        i += 1;
                    }
                    if v.is_empty() {
                        return Err(OptionsError::MissingValue(spec.name));
                    }
                    v
                }
                (_, None) => {
                    let Some(v) = args.get(i) else { return Err(OptionsError::MissingValue(spec.name)) };
                    i += 1;
                    vec![v.clone()]
                }
            };
            for text in texts {
                let value = spec.kind.parse_within(&text, spec.range).map_err(|r| match r {
                    Refusal::Invalid => OptionsError::InvalidValue { name: spec.name.clone(), value: text.clone() },
                    Refusal::OutOfRange(range) => {
                        OptionsError::OutOfRange { name: spec.name.clone(), value: text.clone(), range }
                    }
                })?;
                match (given.get_mut(&spec.name), value) {
                    (Some(Value::Strings(acc)), Value::Strings(mut more)) => acc.append(&mut more),
                    (_, v) => {
                        given.insert(spec.name.clone(), v);
                    }
                }
            }
        }
        for (k, v) in given {
            props.set(&k, v);
        }
        Ok(())
    }

    /// Checks that every required option is set. Call it after `--help`, `--version` and similar
    /// options are handled, so that those options work when a required option is missing.
    pub fn check_required(&self, props: &Properties) -> Result<(), OptionsError> {
        match self.groups.iter().flat_map(|g| &g.options).find(|o| o.required && !props.exists(&o.name)) {
            Some(o) => Err(OptionsError::Required(o.name.clone())),
            None => Ok(()),
        }
    }

    /// Returns the text that `--help` prints.
    pub fn help(&self) -> String {
        let mut out = String::new();
        for g in &self.groups {
            let _ = writeln!(out, "{}:", g.title);
            for o in &g.options {
                let mut left = match o.short {
                    Some(c) => format!("  -{c} [ --{} ]", o.name),
                    None => format!("  --{}", o.name),
                };
                if o.kind != Kind::Flag {
                    match &o.default {
                        Some(d) => left.push_str(&format!(" arg (={d})")),
                        None => left.push_str(" arg"),
                    }
                }
                // Boost aligns a description's continuation lines under its first line.
                let _ = writeln!(out, "{left:<50} {}", o.description.replace('\n', &format!("\n{:51}", "")));
            }
            out.push('\n');
        }
        out
    }

    /// Returns the text that `--print-options` prints: one line
    /// `<option>:<value>:<type>:<description>` per option.
    pub fn print_options(&self, props: &Properties) -> String {
        let mut out = String::new();
        for o in self.groups.iter().flat_map(|g| &g.options) {
            let (value, label) = match props.value(&o.name) {
                Some(v) => (v.to_string(), o.kind.label()),
                None => (String::new(), "<unknown>"),
            };
            let _ = writeln!(out, "{}:{value}:{label}:{}", o.name, o.description.replace('\n', " "));
        }
        out
    }

    /// Returns the configuration dump that FairMQ logs at debug level at start: one line
    /// `key = value <type> [origin]` per property.
    pub fn configuration_dump(&self, props: &Properties) -> String {
        let mut out = String::from("Configuration:\n");
        for k in props.keys() {
            let v = props.get_as_string(&k).unwrap_or_default();
            let spec = self.find(Some(&k), None);
            let origin = match spec.and_then(|s| s.default.as_ref()) {
                Some(d) if d.to_string() == v => "[default]",
                _ if v.is_empty() => "[empty]",
                _ => "[provided]",
            };
            let label = spec.map_or("string", |s| s.kind.label());
            let _ = writeln!(out, "{k} = {v} <{label}> {origin}");
        }
        out
    }
}

/// The largest number of ZeroMQ I/O threads that `--io-threads` accepts. FairMQ sets no limit.
/// But each thread takes two file descriptors, and libzmq aborts the process when it cannot
/// create them. A few threads are plenty: ZeroMQ's guide advises one thread per gigabyte per
/// second.
pub const MAX_IO_THREADS: i64 = 64;

/// The largest value that `--shm-metadata-msg-size` accepts. Every send pads its metadata frame
/// to the size that this option sets.
pub const MAX_METADATA_MSG_SIZE: u64 = 1 << 20;

/// The name of the option that asks for a Prometheus metrics endpoint (see the `metrics` module).
pub const METRICS_ADDRESS: &str = "metrics-address";

/// The title of the group of device options. FairMQ's config plugin has a group of this title.
pub const DEVICE_GROUP: &str = "FairMQ device options";
/// The title of the group of the builtin controller's options.
pub const CONTROL_GROUP: &str = "Control (builtin) Plugin";

/// Returns FairMQ's general, device and control options, with their defaults.
pub fn standard() -> Options {
    let mut o = Options::default();
    let mut general = OptionGroup::new("FairMQ Command Line Options");
    general
        .add_flag_with_short("help", 'h', "Print help")
        .add_flag_with_short("version", 'v', "Print version")
        .add(
            "severity",
            Kind::Str,
            "",
            "Log severity level (console): trace, debug, info, state, warn, error, fatal, nolog",
        )
        .add(
            "file-severity",
            Kind::Str,
            "debug",
            "Log severity level (file): trace, debug, info, state, warn, error, fatal, nolog",
        )
        .add("verbosity", Kind::Str, "medium", "Log verbosity level: veryhigh, high, medium, low")
        .add("color", Kind::Bool, true, "Log color (true/false)")
        .add("log-to-file", Kind::Str, "", "Log output to a file.")
        .add(
            "log-summary",
            Kind::Str,
            "library",
            "Summarise repeated log lines: 'library' (the framework's own), 'all' (the program's too), 'none'",
        )
        .add_optional(
            "print-options",
            Kind::Flag,
            "Print options in machine-readable format (<option>:<computed-value>:<type>:<description>)",
        );
    o.add_group(general);

    let mut device = OptionGroup::new(DEVICE_GROUP);
    device
        // `--id` is optional, as in FairMQ. Without `--id`, the device reads its channel
        // configuration only when `--config-key` is given.
        .add("id", Kind::Str, "", "Device ID.")
        .add("io-threads", Kind::Int, 1i32, "Number of I/O threads.")
        .within(1i64..=MAX_IO_THREADS)
        .add("transport", Kind::Str, "zeromq", "Transport ('zeromq'/'shmem').")
        .add("network-interface", Kind::Str, "default", "Network interface to bind on (e.g. eth0, ib0..., default will try to detect the interface of the default route).")
        .add("init-timeout", Kind::Int, 120i32, "Timeout for the initialization in seconds (when expecting dynamic initialization).")
        .within(0..=i64::from(i32::MAX))
        .add_optional("print-channels", Kind::Flag, "Print registered channel endpoints in a machine-readable format (<channel name>:<min num subchannels>:<max num subchannels>)")
        .add("shm-segment-size", Kind::Size, 2u64 << 30, "Shared memory: size of the shared memory segment (in bytes).")
        // The segment's file is sized with an `off_t`, a signed 64-bit integer.
        .within(1..=i64::MAX as u64)
        .add("shm-allocation", Kind::Str, "rbtree_best_fit", "Shared memory allocation algorithm: rbtree_best_fit/simple_seq_fit (fairmq-rs always uses its TLSF allocator).")
        .add("shm-segment-id", Kind::U16, 0u16, "EXPERIMENTAL: Shared memory segment id for message creation.")
        .add_optional("shmid", Kind::U64, "EXPERIMENTAL: Shared memory id (decimal) instead of the one derived from session and user id.")
        .add("shm-mlock-segment", Kind::Bool, false, "Shared memory: mlock the shared memory segment after initialization.")
        .add("shm-mlock-segment-on-creation", Kind::Bool, false, "Shared memory: mlock the shared memory segment only once when created.")
        .add("shm-zero-segment", Kind::Bool, false, "Shared memory: zero the shared memory segment memory after initialization.")
        .add("shm-zero-segment-on-creation", Kind::Bool, false, "Shared memory: zero the shared memory segment memory only once when created.")
        .add("shm-throw-bad-alloc", Kind::Bool, true, "Throw a fair::mq::MessageBadAlloc if cannot allocate a message (retry if false).")
        .add("shm-metadata-msg-size", Kind::Size, 0u64, "Shared memory: size of the zmq metadata message (values smaller than minimum are clamped to the minimum).")
        .within(0..=MAX_METADATA_MSG_SIZE)
        .add_optional("bad-alloc-max-attempts", Kind::Int, "Maximum number of allocation attempts before throwing MessageBadAlloc. -1 is infinite.")
        .within(-1..=i64::from(i32::MAX))
        .add("bad-alloc-attempt-interval", Kind::Int, 50i32, "Interval between failed allocation attempts (in ms).")
        .within(0..=i64::from(i32::MAX))
        .add("shm-monitor", Kind::Bool, false, "Shared memory: run monitor daemon.")
        .add("shm-no-cleanup", Kind::Bool, false, "Shared memory: do not cleanup the memory when last device leaves.")
        .add("shm-lanes", Kind::Bool, true, "Shared memory: pass metadata between single peers (PAIR, PUSH connected to one endpoint) through a ring in the segment instead of a ZeroMQ message each (fairmq-rs).")
        .add("rate", Kind::Float, 0.0f32, "Rate for conditional run loop (Hz).")
        .within(0.0..=f64::from(f32::MAX))
        .add("session", Kind::Str, "default", "Session name.")
        .add(METRICS_ADDRESS, Kind::Str, "", "Serve Prometheus metrics at http://HOST:PORT/metrics (port 0: a free port, logged; empty: no endpoint). Read-only counts, never payload: bind to loopback or a trusted interface (fairmq-rs).")
        .add_optional("config-key", Kind::Str, "Use provided value instead of device id for fetching the configuration from JSON file")
        .add_optional("mq-config", Kind::Str, "JSON input as file.")
        .add_optional("channel-config", Kind::Strings, "Configuration of single or multiple channel(s) by comma separated key=value list");
    o.add_group(device);

    let mut control = OptionGroup::new(CONTROL_GROUP);
    control
        .add(
            "control",
            Kind::Str,
            "dynamic",
            "Control mode, 'static' or 'dynamic' (aliases 'interactive' and 'external'), 'gui' or 'none'",
        )
        .add("catch-signals", Kind::Int, 1i32, "Enable signal handling (1/0).");
    o.add_group(control);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn defaults_forms_and_unknown_options() {
        let mut o = standard();
        let p = Properties::new();
        o.parse(&args("--id sampler1 --rate=2.5 --sess x --transport shmem stray -v"), &p).unwrap();
        assert_eq!(p.get::<String>("id").unwrap(), "sampler1");
        assert_eq!(p.get::<f32>("rate").unwrap(), 2.5);
        assert_eq!(p.get::<String>("session").unwrap(), "default", "no abbreviations");
        assert_eq!(p.get::<String>("transport").unwrap(), "shmem");
        assert_eq!(p.get::<i32>("init-timeout").unwrap(), 120);
        assert_eq!(p.get::<u64>("shm-segment-size").unwrap(), 2 << 30);
        assert!(p.get::<bool>("version").unwrap());
        assert!(!p.exists("mq-config"));
        assert_eq!(o.unregistered, ["--sess", "x", "stray"]);
        o.check_required(&p).unwrap();
    }

    #[test]
    fn value_options_take_the_next_token_even_if_it_is_an_option() {
        let mut o = standard();
        let p = Properties::new();
        o.parse(&args("--id a --session --transport shmem"), &p).unwrap();
        assert_eq!(p.get::<String>("session").unwrap(), "--transport");
        assert_eq!(p.get::<String>("transport").unwrap(), "zeromq");
    }

    #[test]
    fn multitoken_composing_and_errors() {
        let mut o = standard();
        let p = Properties::new();
        o.parse(&args("--id a --channel-config name=a,type=push name=b,type=pull --channel-config name=c,type=pair --color false"), &p)
            .unwrap();
        assert_eq!(p.get::<Vec<String>>("channel-config").unwrap().len(), 3);
        assert!(!p.get::<bool>("color").unwrap());
        let e = standard().parse(&args("--rate fast"), &Properties::new()).unwrap_err();
        assert_eq!(e.to_string(), "the argument ('fast') for option '--rate' is invalid");
        let e = standard().parse(&args("--id"), &Properties::new()).unwrap_err();
        assert_eq!(e, OptionsError::MissingValue("id".into()));
        let p = Properties::new();
        let mut o = standard();
        o.parse(&[], &p).unwrap();
        assert_eq!(o.check_required(&p), Ok(()), "--id is optional, as in FairMQ");
        assert_eq!(p.get::<String>("id").unwrap(), "");
        let mut custom = OptionGroup::new("custom");
        custom.add_required("num-senders", Kind::Int, "Number of senders.");
        o.add_group(custom);
        o.parse(&[], &p).unwrap();
        assert_eq!(o.check_required(&p), Err(OptionsError::Required("num-senders".into())));
        assert!(standard().parse(&args("--shm-segment-id 70000"), &Properties::new()).is_err());
        // Boost refuses a single-value option given twice and an empty value after '='.
        let e = standard().parse(&args("--id a --control static --control dynamic"), &Properties::new()).unwrap_err();
        assert_eq!(e.to_string(), "option '--control' cannot be specified more than once");
        let e = standard().parse(&args("--id="), &Properties::new()).unwrap_err();
        assert_eq!(e, OptionsError::EmptyInline("id".into()));
    }

    #[test]
    fn i14_every_numeric_option_refuses_values_beyond_its_range_naming_it_and_the_range() {
        let o = standard();
        let mut checked = 0;
        for spec in o.groups.iter().flat_map(|g| &g.options) {
            let Some(own) = spec.kind.range() else { continue };
            let range = spec.range.unwrap_or(own);
            if let Some(d) = &spec.default {
                let text = d.to_string();
                assert!(
                    spec.kind.parse_within(&text, spec.range).is_ok(),
                    "--{}: default {text} outside {range}",
                    spec.name
                );
            }
            let beyond: Vec<String> = match range {
                Range::Int { min, max } => vec![(min - 1).to_string(), (max + 1).to_string()],
                Range::Float { min, max } => vec![(min * 10.0 - 1.0).to_string(), (max * 10.0 + 1.0).to_string()],
            };
            for value in beyond {
                let e = standard().parse(&[format!("--{}", spec.name), value.clone()], &Properties::new()).unwrap_err();
                assert_eq!(e, OptionsError::OutOfRange { name: spec.name.clone(), value: value.clone(), range });
                let text = e.to_string();
                assert!(text.contains(&format!("'--{}'", spec.name)) && text.contains(&range.to_string()), "{text}");
            }
            checked += 1;
        }
        assert!(checked >= 10, "all numeric options: {checked}");
        let e = standard().parse(&args("--io-threads 100000000"), &Properties::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the argument ('100000000') for option '--io-threads' is out of range: allowed are 1 to 64"
        );
    }

    #[test]
    fn print_options_format() {
        let mut o = standard();
        let p = Properties::new();
        o.parse(&args("--id x"), &p).unwrap();
        let text = o.print_options(&p);
        assert!(text.lines().any(|l| l == "id:x:string:Device ID."), "{text}");
        assert!(text.lines().any(|l| l.starts_with("mq-config::<unknown>:")));
        assert!(o.help().contains("--transport arg (=zeromq)"));
    }
}
