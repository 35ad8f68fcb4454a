//! Which plugins a program loads: [`PluginManager`] (FairMQ's `PluginManager`).
//!
//! `-P`/`--plugin NAME` names a plugin. It may be given several times, and the plugins load in
//! that order. The prefix of a name says what it is:
//!
//! - `d:NAME`, or a bare `NAME`, is a shared library `libfairmq-plugin-NAME.so` (or
//!   `libFairMQPlugin_NAME.so`). A bare name of a builtin plugin, such as `pmix`, is that plugin.
//! - `p:NAME` is a plugin linked into the program.
//! - `s:NAME` is a builtin plugin.
//!
//! A library is looked for first in the directories of `-S`/`--plugin-search-path`
//! ([`search_paths`]), then through the system's library lookup (`LD_LIBRARY_PATH`, RUNPATH,
//! system directories). A library or search directory that another user could change is refused.
//! A name the program already has (one of its own plugins, `control`, `config`) loads nothing.

use super::dynamic::DynamicPlugin;
use super::Plugin;
use crate::options::{Kind, OptionGroup, Options, OptionsError};
use crate::properties::Properties;
use std::path::{Path, PathBuf};

/// Why the plugins could not be loaded. The messages are FairMQ's texts. The program exits with 1.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PluginError {
    /// `-P`/`-S` could not be read.
    #[error("Error occured while parsing the 'Plugin Manager' program options: {0}")]
    Options(OptionsError),
    /// An empty search path (e.g. a lone `<`).
    #[error("Specified path is empty.")]
    EmptyPath,
    /// A search path that exists but is not a directory.
    #[error("{0:?} is not a directory.")]
    NotADirectory(PathBuf),
    /// A search path or plugin library that another local user could change. That user could
    /// make the device run their code.
    #[error("plugin search path: {0}")]
    Untrusted(String),
    /// No library of the plugin could be loaded; `reasons` says what was tried and failed.
    #[error("Could not load dynamic plugin {name} from configured search paths (-S) nor with system lookup (system libdirs, RUNPATH, $LD_LIBRARY_PATH).{}", reasons_text(.reasons))]
    Load {
        /// Plugin name.
        name: String,
        /// What each attempt found wrong.
        reasons: Vec<String>,
    },
    /// A `p:` plugin that the program does not contain.
    #[error("An error occurred while loading prelinked dynamic plugin {name}: {reason}")]
    Prelinked {
        /// Plugin name.
        name: String,
        /// What was wrong.
        reason: String,
    },
    /// An `s:` plugin that is not built in.
    #[error("An error occurred while loading static plugin {name}: {reason}")]
    Static {
        /// Plugin name.
        name: String,
        /// What was wrong.
        reason: String,
    },
    /// A plugin that failed to start.
    #[error("An error occurred while instantiating plugin {name}: {reason}")]
    Instantiation {
        /// Plugin name.
        name: String,
        /// What was wrong.
        reason: String,
    },
}

fn reasons_text(reasons: &[String]) -> String {
    if reasons.is_empty() {
        String::new()
    } else {
        format!(" Tried: {}.", reasons.join("; "))
    }
}

/// The library file names plugin `name` may have, in the order they are tried.
pub fn library_names(name: &str) -> [String; 2] {
    [format!("libfairmq-plugin-{name}.so"), format!("libFairMQPlugin_{name}.so")]
}

/// The `-P` names and `-S` search paths of a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginManager {
    /// Plugin names as given (with their prefixes), in order.
    pub names: Vec<String>,
    /// Directories searched, in order, before the system's lookup.
    pub search_paths: Vec<PathBuf>,
}

/// FairMQ's help texts, with FairMQ's spacing kept.
const SEARCH_PATH_HELP: &str = "List of plugin search paths.\n\n* Override default search path, e.g.\n  -S /home/user/lib /lib\n* Append(>) or prepend(<) to default search path, e.g.\n  -S >/lib </home/user/lib\n* If you mix the overriding and appending/prepending syntaxes, the overriding paths act as default search path, e.g.\n  -S /usr/lib >/lib </home/user/lib /usr/local/lib results in /home/user/lib,/usr/local/lib,/usr/lib/,/lib\nIf nothing is found, the default dynamic library lookup is performed, see man ld.so(8) for details.";
const PLUGIN_HELP: &str = "List of plugin names to load in order,e.g. if the file is called 'libfairmq-plugin-example.so', just list 'example' or 'd:example' here.To load a prelinked plugin, list 'p:example' here.";

impl PluginManager {
    /// The "Plugin Manager" options: `-S/--plugin-search-path`, `-P/--plugin`.
    pub fn options() -> OptionGroup {
        let mut g = OptionGroup::new("Plugin Manager");
        g.add_optional_with_short("plugin-search-path", 'S', Kind::Strings, SEARCH_PATH_HELP).add_optional_with_short(
            "plugin",
            'P',
            Kind::Strings,
            PLUGIN_HELP,
        );
        g
    }

    /// Reads `-P` and `-S` from a whole command line, and leaves the other options for later.
    /// `from_args` also knows FairMQ's standard options. So in `--id -Pfoo`, `-Pfoo` stays the
    /// value of `--id` and loads no plugin `foo`.
    pub fn from_args(args: &[String]) -> Result<PluginManager, PluginError> {
        let mut opts = crate::options::standard();
        opts.add_group(Self::options());
        Self::from_args_with(&opts, args)
    }

    /// Like [`PluginManager::from_args`], but with the options that the program knows. `opts`
    /// holds this manager's group. A value of any option in `opts` is then never read as `-P`.
    pub fn from_args_with(opts: &Options, args: &[String]) -> Result<PluginManager, PluginError> {
        // Parsing records the tokens that it did not know. Parse a copy, so that the caller's
        // `opts` stays as it was.
        let mut opts = opts.clone();
        let props = Properties::new();
        opts.parse(args, &props).map_err(PluginError::Options)?;
        let list = |k: &str| props.get_or::<Vec<String>>(k, Vec::new()).unwrap_or_default();
        Ok(PluginManager { names: list("plugin"), search_paths: search_paths(&list("plugin-search-path"))? })
    }

    /// Loads the plugins that `-P` names, in order, and skips repeats. `present` names the plugins
    /// that the program has already. A name that [`builtin`](super::builtin) makes (bare or `s:`)
    /// loads that builtin plugin, not a library. Any other `s:NAME` must be in `present`.
    pub fn load(&self, present: &[&str]) -> Result<Vec<Box<dyn Plugin>>, PluginError> {
        let mut loaded: Vec<Box<dyn Plugin>> = Vec::new();
        for given in &self.names {
            let (kind, name) = match given.get(..2) {
                Some(p @ ("d:" | "p:" | "s:")) => (&p[..1], &given[2..]),
                _ => ("d", given.as_str()),
            };
            if loaded.iter().any(|p| p.name() == name) {
                continue;
            }
            if kind != "p" {
                if present.contains(&name) {
                    continue;
                }
                if let Some(p) = super::builtin(name) {
                    loaded.push(p);
                    continue;
                }
            }
            match kind {
                "s" => {
                    return Err(PluginError::Static {
                        name: name.into(),
                        reason: "no builtin plugin of this name".into(),
                    })
                }
                "p" => loaded.push(Box::new(
                    DynamicPlugin::load(name, None)
                        .map_err(|reason| PluginError::Prelinked { name: name.into(), reason })?,
                )),
                _ => loaded.push(Box::new(self.load_library(name)?)),
            }
        }
        Ok(loaded)
    }

    /// Loads plugin `name` from the first library file found in the search paths. Otherwise, it
    /// loads the plugin through the system's lookup of the bare file names.
    fn load_library(&self, name: &str) -> Result<DynamicPlugin, PluginError> {
        let mut reasons = Vec::new();
        if name.is_empty() || name.contains(['/', '\0']) {
            reasons.push(format!("'{name}' is not a plugin name"));
            return Err(PluginError::Load { name: name.into(), reasons });
        }
        let files = library_names(name);
        let found =
            self.search_paths.iter().flat_map(|dir| files.iter().map(move |f| dir.join(f))).find(|p| p.exists());
        if let Some(path) = found {
            // A library found through -S that another user could change is refused. No other
            // library of that name is looked for instead.
            let euid = nix::unistd::geteuid().as_raw();
            if let Err(why) = crate::file_trust::check_owned(&path, euid) {
                reasons.push(why);
                return Err(PluginError::Load { name: name.into(), reasons });
            }
            match DynamicPlugin::load(name, Some(&path.to_string_lossy())) {
                Ok(p) => return Ok(p),
                Err(e) => reasons.push(format!("{}: {e}", path.display())),
            }
        }
        for f in &files {
            match DynamicPlugin::load(name, Some(f)) {
                Ok(p) => return Ok(p),
                Err(e) => reasons.push(format!("system lookup: {e}")),
            }
        }
        Err(PluginError::Load { name: name.into(), reasons })
    }
}

/// Builds the search path from the `-S` values. Plain values replace the default list, which is
/// empty. `<dir` values go in front, the last given first. `>dir` values go at the end.
pub fn search_paths(values: &[String]) -> Result<Vec<PathBuf>, PluginError> {
    let (mut front, mut plain, mut back) = (Vec::new(), Vec::new(), Vec::new());
    for v in values {
        let (list, path) = match v.as_bytes().first() {
            Some(b'<') => (&mut front, &v[1..]),
            Some(b'>') => (&mut back, &v[1..]),
            _ => (&mut plain, v.as_str()),
        };
        list.push(valid_search_path(path)?);
    }
    front.reverse();
    Ok(front.into_iter().chain(plain).chain(back).collect())
}

fn valid_search_path(p: &str) -> Result<PathBuf, PluginError> {
    if p.is_empty() {
        return Err(PluginError::EmptyPath);
    }
    let path = Path::new(p);
    // FairMQ accepts a path that does not exist, and so does this function: nothing is found
    // there.
    if path.exists() && !path.is_dir() {
        return Err(PluginError::NotADirectory(path.to_owned()));
    }
    if path.exists() {
        crate::file_trust::check_owned(path, nix::unistd::geteuid().as_raw()).map_err(PluginError::Untrusted)?;
    }
    Ok(path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn search_paths_mix_override_prepend_and_append_as_fairmq() {
        let dir = tempfile::tempdir().unwrap();
        let d = |n: &str| {
            let p = dir.path().join(n);
            std::fs::create_dir_all(&p).unwrap();
            p.to_string_lossy().into_owned()
        };
        let (usr, lib, home, local) = (d("usr/lib"), d("lib"), d("home/user/lib"), d("usr/local/lib"));
        let line = format!("-S {usr} >{lib} <{home} {local} --id x");
        let m = PluginManager::from_args(&strings(&line)).unwrap();
        let want: Vec<PathBuf> = [home, usr, local, lib].iter().map(PathBuf::from).collect();
        assert_eq!(m.search_paths, want);
        assert!(m.names.is_empty());
    }

    #[test]
    fn an_option_value_that_looks_like_dash_p_loads_no_plugin() {
        let m = PluginManager::from_args(&strings("--id -Pfoo --control static")).unwrap();
        assert!(m.names.is_empty(), "{:?}", m.names);
        let m = PluginManager::from_args(&strings("--id x -Pfoo")).unwrap();
        assert_eq!(m.names, ["foo"]);
    }

    #[test]
    fn bad_search_paths_and_unknown_plugins_are_errors() {
        assert_eq!(PluginManager::from_args(&strings("-S <")), Err(PluginError::EmptyPath));
        let file = tempfile::NamedTempFile::new().unwrap();
        let line = format!("-S {}", file.path().display());
        assert_eq!(PluginManager::from_args(&strings(&line)), Err(PluginError::NotADirectory(file.path().into())));
        assert!(matches!(PluginManager::from_args(&strings("--id x -P")), Err(PluginError::Options(_))));
        let m = PluginManager::from_args(&strings("-P dds --control static -P s:control")).unwrap();
        assert_eq!(m.names, ["dds", "s:control"]);
        let e = m.load(&["control"]).err().expect("no libfairmq-plugin-dds.so here");
        assert!(
            e.to_string().starts_with(
                "Could not load dynamic plugin dds from configured search paths (-S) nor with system lookup"
            ),
            "{e}"
        );
        let e = PluginManager::from_args(&strings("-P s:nope")).unwrap().load(&["control"]).err().unwrap();
        assert_eq!(e.to_string(), "An error occurred while loading static plugin nope: no builtin plugin of this name");
        let e = PluginManager::from_args(&strings("-P p:nope")).unwrap().load(&[]).err().unwrap();
        assert!(e.to_string().contains("prelinked dynamic plugin nope: no symbol fmq_plugin_nope"), "{e}");
        let e = PluginManager::from_args(&strings("-P ../x")).unwrap().load(&[]).err().unwrap();
        assert!(e.to_string().contains("'../x' is not a plugin name"), "{e}");
    }
}
