//! Plugins (FairMQ's plugin system): code that runs beside a device and may drive it.
//!
//! - [`Plugin`] is the trait of a plugin. [`Plugin::start`] gets the plugin's
//!   [`PluginServices`] once the device exists. [`Plugin::stop`] runs after the device exited.
//! - [`PluginManager`] loads the plugins that `-P`/`--plugin` names: shared libraries found
//!   through `-S`/`--plugin-search-path`, or builtin ones such as `pmix` (see [`manager`]).
//! - [`DeviceControl`] lets at most one plugin at a time control the device.
//! - [`ControlPlugin`] is the builtin controller (`--control`, see `control`).
//! - [`c_abi`] declares the C ABI of plugin libraries. [`export`] writes such a library in Rust.
//!
//! A program starts its plugins in this order: those that `-P` names, then those it was built
//! with (`Program::plugin`), and last the builtin controller. It stops them in the reverse
//! order.

mod builtin_control;
pub mod c_abi;
#[allow(unsafe_code)]
mod dynamic;
#[allow(unsafe_code)]
pub mod export;
pub mod manager;
#[cfg(feature = "pmix")]
pub mod pmix;

pub use builtin_control::ControlPlugin;

/// A builtin plugin that a program makes only when `-P` names it (`pmix` with the `pmix`
/// feature).
pub fn builtin(name: &str) -> Option<Box<dyn Plugin>> {
    match name {
        #[cfg(feature = "pmix")]
        "pmix" => Some(Box::new(pmix::PmixPlugin::default())),
        _ => None,
    }
}
pub use crate::handle::PluginServices;
pub use crate::handle::{DeviceControl, DeviceControlError};
pub use dynamic::{add_options, read_option_table, OptionDecl, OptionTableError};
pub use manager::{PluginError, PluginManager};

use crate::options::OptionGroup;
pub use c_abi::fmq_plugin_version as Version;

/// A plugin. Built-in plugins implement it in Rust; plugin libraries (the C ABI of
/// [`c_abi`], in Rust through [`export`]) are wrapped in one by the [`PluginManager`].
pub trait Plugin: Send {
    /// Name (`-P NAME`; the key of its subscriptions and its name as a controller).
    fn name(&self) -> &str;
    /// Version.
    fn version(&self) -> Version {
        Version::default()
    }
    /// Who maintains it.
    fn maintainer(&self) -> &str {
        ""
    }
    /// Where to read about it.
    fn homepage(&self) -> &str {
        ""
    }
    /// The options it reads (shown by `--help`).
    fn options(&self) -> Option<OptionGroup> {
        None
    }
    /// Starts the plugin once the device exists (spawn threads here; return promptly). An error
    /// ends the program with exit code 1 before the device starts.
    fn start(&mut self, services: PluginServices) -> Result<(), crate::BoxError>;
    /// Called after the device exited and no plugin holds control: join threads here.
    fn stop(&mut self) {}
}

/// FairMQ's description of a plugin: `'NAME', version 'M.m.p', maintainer '…', homepage '…'`.
pub fn describe(p: &dyn Plugin) -> String {
    let v = p.version();
    format!(
        "'{}', version '{}.{}.{}', maintainer '{}', homepage '{}'",
        p.name(),
        v.major,
        v.minor,
        v.patch,
        p.maintainer(),
        p.homepage()
    )
}
