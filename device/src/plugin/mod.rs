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

/// Makes the builtin plugin `name`, or returns `None` when there is no such plugin.
///
/// A program makes a builtin plugin only when `-P` names it. `pmix` is a builtin plugin when the
/// crate has the `pmix` feature.
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

/// A plugin.
///
/// Builtin plugins implement `Plugin` in Rust. A plugin library implements the C ABI of
/// [`c_abi`] (in Rust, through [`export`]), and the [`PluginManager`] wraps it in a `Plugin`.
pub trait Plugin: Send {
    /// The plugin's name: the NAME of `-P NAME`. The name is also the key of the plugin's state
    /// subscriptions, and the plugin's name as the device's controller.
    fn name(&self) -> &str;
    /// The plugin's version.
    fn version(&self) -> Version {
        Version::default()
    }
    /// Who maintains the plugin.
    fn maintainer(&self) -> &str {
        ""
    }
    /// Where to read about the plugin.
    fn homepage(&self) -> &str {
        ""
    }
    /// The options that the plugin reads. `--help` shows them.
    fn options(&self) -> Option<OptionGroup> {
        None
    }
    /// Starts the plugin once the device exists. Spawn threads here and return promptly. An error
    /// ends the program with exit code 1 before the device starts.
    fn start(&mut self, services: PluginServices) -> Result<(), crate::BoxError>;
    /// Stops the plugin. The program calls `stop` after the device exited and no plugin holds
    /// control. Join threads here.
    fn stop(&mut self) {}
}

/// Describes a plugin as FairMQ does: `'NAME', version 'M.m.p', maintainer '…', homepage '…'`.
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
