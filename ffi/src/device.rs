//! Devices written in C, and the context that their hooks get.
//!
//! A C device is a table of hook callbacks ([`fmq_device_hooks`]) and a user pointer that every
//! hook gets. [`fmq_run_device`] runs it as FairMQ's `runDevice` runs a C++ device: with the same
//! options, control modes, signal handling and exit codes. [`fmq_run_device_factory`] instead
//! calls a factory ([`fmq_device_factory`], FairMQ's `getDevice`) once the configuration is
//! parsed, and the factory fills the table.
//!
//! A hook gets an [`fmq_context`], valid only during the hook and on the hook's thread. Through
//! it, the hook registers data handlers ([`fmq_context_on_data`], [`fmq_context_on_data_parts`]),
//! reaches the device's channels, transport and configuration, and learns whether a transition is
//! pending ([`fmq_context_new_state_pending`]).

use crate::channel::{fmq_channel, fmq_parts};
use crate::config::{config_ptr, fmq_config};
use crate::error::*;
use crate::message::fmq_message;
use crate::ptr::*;
use crate::transport::fmq_transport;
use fairmq::plugin::{add_options, read_option_table, OptionDecl, OptionTableError};
use fairmq::{Context, Device, HookResult, Message, Parts, Program};
use std::ffi::{c_char, c_void, CString};

/// What a hook gets: the running device's context (channels, configuration, state). Valid only
/// during the hook call; use it from the hook's thread only.
#[allow(non_camel_case_types)]
#[repr(transparent)]
pub struct fmq_context(pub(crate) Context);

/// A hook: returns 0 on success; anything else takes the device to ERROR. Hooks must not throw (C++):
/// an exception that reaches the library ends the process.
#[allow(non_camel_case_types)]
pub type fmq_hook = Option<unsafe extern "C-unwind" fn(ctx: *const fmq_context, user: *mut c_void) -> i32>;

/// `conditional_run`: 1 to be called again, 0 to end RUNNING, negative for ERROR.
#[allow(non_camel_case_types)]
pub type fmq_conditional_hook = Option<unsafe extern "C-unwind" fn(ctx: *const fmq_context, user: *mut c_void) -> i32>;

/// A data handler: 1 to continue, 0 to end RUNNING, negative for ERROR. The message (or parts)
/// belongs to the framework: the handler may send it, or move it into a message of its own with
/// `fmq_message_take` to keep it; nothing else of it may be kept after returning.
#[allow(non_camel_case_types)]
pub type fmq_data_hook = Option<
    unsafe extern "C-unwind" fn(
        ctx: *const fmq_context,
        channel: *const c_char,
        msg: *mut fmq_message,
        index: i32,
        user: *mut c_void,
    ) -> i32,
>;

/// A multipart data handler (see `fmq_data_hook`).
#[allow(non_camel_case_types)]
pub type fmq_parts_hook = Option<
    unsafe extern "C-unwind" fn(
        ctx: *const fmq_context,
        channel: *const c_char,
        parts: *mut fmq_parts,
        index: i32,
        user: *mut c_void,
    ) -> i32,
>;

/// The hooks of a C device; NULL members do nothing (`conditional_run` NULL: RUNNING ends at once).
#[repr(C)]
#[derive(Clone, Copy, Default)]
#[allow(non_camel_case_types)]
pub struct fmq_device_hooks {
    /// INITIALIZING DEVICE, before channels exist.
    pub init: fmq_hook,
    /// INITIALIZING TASK (register data handlers with `fmq_context_on_data` here).
    pub init_task: fmq_hook,
    /// RUNNING, once before the loop.
    pub pre_run: fmq_hook,
    /// RUNNING, repeatedly (without data handlers).
    pub conditional_run: fmq_conditional_hook,
    /// RUNNING, once after the conditional_run loop (without data handlers).
    pub run: fmq_hook,
    /// RUNNING, after the loop; a transition is pending (transports interrupted).
    pub post_run: fmq_hook,
    /// RESETTING TASK.
    pub reset_task: fmq_hook,
    /// RESETTING DEVICE, before channels are destroyed.
    pub reset: fmq_hook,
    /// Messages of channels registered with `fmq_context_on_data`.
    pub handle_data: fmq_data_hook,
    /// Multiparts of channels registered with `fmq_context_on_data_parts`.
    pub handle_parts: fmq_parts_hook,
    /// BINDING, after the channels that bind are bound (FairMQ's `Bind()`). Run by devices of
    /// `fmq_run_device_factory` only: `fmq_run_device` reads the table without `bind` and
    /// `connect`, as programs built before they existed pass it.
    pub bind: fmq_hook,
    /// CONNECTING, after the channels that connect are connected (FairMQ's `Connect()`); as
    /// `bind`, with `fmq_run_device_factory` only.
    pub connect: fmq_hook,
}

/// The hook table before `bind` and `connect` (what `fmq_run_device` reads: a program built
/// against that header passes no more).
#[repr(C)]
#[derive(Clone, Copy)]
struct HooksBeforeBind {
    init: fmq_hook,
    init_task: fmq_hook,
    pre_run: fmq_hook,
    conditional_run: fmq_conditional_hook,
    run: fmq_hook,
    post_run: fmq_hook,
    reset_task: fmq_hook,
    reset: fmq_hook,
    handle_data: fmq_data_hook,
    handle_parts: fmq_parts_hook,
}

impl From<HooksBeforeBind> for fmq_device_hooks {
    fn from(h: HooksBeforeBind) -> Self {
        fmq_device_hooks {
            init: h.init,
            init_task: h.init_task,
            pre_run: h.pre_run,
            conditional_run: h.conditional_run,
            run: h.run,
            post_run: h.post_run,
            reset_task: h.reset_task,
            reset: h.reset,
            handle_data: h.handle_data,
            handle_parts: h.handle_parts,
            bind: None,
            connect: None,
        }
    }
}

pub use fairmq::plugin::c_abi::{
    fmq_option, fmq_option_type, option_kind, FMQ_OPTION_BOOL, FMQ_OPTION_FLAG, FMQ_OPTION_FLOAT, FMQ_OPTION_INT,
    FMQ_OPTION_REQUIRED, FMQ_OPTION_STRING, FMQ_OPTION_STRINGS, FMQ_OPTION_UINT16, FMQ_OPTION_UINT64,
};

pub(crate) struct CDevice {
    pub(crate) hooks: fmq_device_hooks,
    pub(crate) user: *mut c_void,
}

// SAFETY: the device runs on the state-loop thread only; the C side promises (in fmq_run_device's
// contract) that its hooks and user pointer may be used from that thread.
unsafe impl Send for CDevice {}

fn ctx_ptr(ctx: &Context) -> *const fmq_context {
    // fmq_context is repr(transparent) over Context.
    (ctx as *const Context).cast()
}

impl CDevice {
    fn call(&self, name: &str, hook: fmq_hook, ctx: &Context) -> HookResult {
        let Some(f) = hook else { return Ok(()) };
        // SAFETY: a C hook of the caller's table, called with a context valid for the call.
        match unsafe { f(ctx_ptr(ctx), self.user) } {
            0 => Ok(()),
            rc => Err(format!("{name} hook returned {rc}").into()),
        }
    }

    fn verdict(name: &str, rc: i32) -> HookResult<bool> {
        match rc {
            r if r < 0 => Err(format!("{name} hook returned {r}").into()),
            r => Ok(r > 0),
        }
    }
}

impl Device for CDevice {
    fn init(&mut self, ctx: &Context) -> HookResult {
        self.call("init", self.hooks.init, ctx)
    }
    fn bind(&mut self, ctx: &Context) -> HookResult {
        self.call("bind", self.hooks.bind, ctx)
    }
    fn connect(&mut self, ctx: &Context) -> HookResult {
        self.call("connect", self.hooks.connect, ctx)
    }
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        self.call("init_task", self.hooks.init_task, ctx)
    }
    fn pre_run(&mut self, ctx: &Context) -> HookResult {
        self.call("pre_run", self.hooks.pre_run, ctx)
    }
    fn conditional_run(&mut self, ctx: &Context) -> HookResult<bool> {
        let Some(f) = self.hooks.conditional_run else { return Ok(false) };
        // SAFETY: as in `call`.
        Self::verdict("conditional_run", unsafe { f(ctx_ptr(ctx), self.user) })
    }
    fn run(&mut self, ctx: &Context) -> HookResult {
        self.call("run", self.hooks.run, ctx)
    }
    fn post_run(&mut self, ctx: &Context) -> HookResult {
        self.call("post_run", self.hooks.post_run, ctx)
    }
    fn reset_task(&mut self, ctx: &Context) -> HookResult {
        self.call("reset_task", self.hooks.reset_task, ctx)
    }
    fn reset(&mut self, ctx: &Context) -> HookResult {
        self.call("reset", self.hooks.reset, ctx)
    }
    fn handle_data(&mut self, ctx: &Context, channel: &str, msg: &mut Message, index: usize) -> HookResult<bool> {
        let f = self.hooks.handle_data.ok_or("no handle_data hook")?;
        let name = CString::new(channel)?;
        // SAFETY: the message pointer is valid for the call (fmq_message is repr(transparent)); the
        // channel name lives until the call returns.
        let rc = unsafe { f(ctx_ptr(ctx), name.as_ptr(), (msg as *mut Message).cast(), index as i32, self.user) };
        Self::verdict("handle_data", rc)
    }
    fn handle_parts(&mut self, ctx: &Context, channel: &str, parts: &mut Parts, index: usize) -> HookResult<bool> {
        let f = self.hooks.handle_parts.ok_or("no handle_parts hook")?;
        let name = CString::new(channel)?;
        // SAFETY: as in handle_data; fmq_parts is repr(transparent) over Parts.
        let rc = unsafe { f(ctx_ptr(ctx), name.as_ptr(), (parts as *mut Parts).cast(), index as i32, self.user) };
        Self::verdict("handle_parts", rc)
    }
}

/// Builds the device once the command line is parsed and logging set up (FairMQ's `getDevice`):
/// reads the configuration `cfg` if it needs to, fills `hooks` (all NULL on entry) and `device`
/// (the `user` pointer the hooks get), and returns 0; anything else means no device, and the
/// program exits 1. Must not throw (C++).
#[allow(non_camel_case_types)]
pub type fmq_device_factory = Option<
    unsafe extern "C-unwind" fn(
        cfg: *const fmq_config,
        user: *mut c_void,
        hooks: *mut fmq_device_hooks,
        device: *mut *mut c_void,
    ) -> i32,
>;

/// The custom options of `options` (`n_options` entries), checked.
///
/// # Safety
/// As for `fmq_run_device`'s `options`.
// SAFETY: unsafe to call because it reads the option table the caller vouches for.
unsafe fn custom_options(options: *const fmq_option, n_options: usize) -> Result<Vec<OptionDecl>, fmq_result> {
    // SAFETY: the caller's contract is the table's.
    unsafe { read_option_table(options, n_options) }.map_err(|e| match e {
        OptionTableError::Null(_) => fail(FMQ_ERROR_NULL, e),
        OptionTableError::Invalid(_) => fail(FMQ_ERROR_INVALID, e),
    })
}

/// Runs the device `make` builds from the parsed configuration, with FairMQ's options and `opts`.
fn run_program(
    args: &[String],
    opts: Vec<OptionDecl>,
    make: impl FnOnce(&std::sync::Arc<fairmq::Properties>) -> Result<CDevice, fairmq::BoxError>,
) -> i32 {
    let program = Program::new(make).options(move |g| add_options(g, &opts));
    program.run_with_args(args.get(1..).unwrap_or(&[]))
}

/// Runs a C device like FairMQ's `runDevice`: parses `argv` (FairMQ's options plus `options`),
/// handles `--help`, `--print-options` and friends, runs the state machine under the control mode
/// and signal handling, and returns the process exit code (0 EXITING, 1 ERROR or bad input).
///
/// # Safety
/// `argv` holds `argc` strings (`argv[0]` the program name); `hooks` is valid; `options` holds
/// `n_options` entries (or is NULL with 0); the hooks and `user` may be used from the thread running
/// the state machine (this one) until the function returns.
#[no_mangle]
pub unsafe extern "C" fn fmq_run_device(
    argc: i32,
    argv: *const *const c_char,
    hooks: *const fmq_device_hooks,
    options: *const fmq_option,
    n_options: usize,
    user: *mut c_void,
) -> i32 {
    guard_value(1, || {
        let r = (|| -> Result<i32, fmq_result> {
            // SAFETY: contracts as documented.
            let (args, hooks) =
                unsafe { (crate::transport::args(argc, argv)?, *refp(hooks.cast::<HooksBeforeBind>(), "hooks")?) };
            let hooks = fmq_device_hooks::from(hooks);
            // SAFETY: contract as documented.
            let opts = unsafe { custom_options(options, n_options)? };
            Ok(run_program(&args, opts, move |_| Ok(CDevice { hooks, user })))
        })();
        r.unwrap_or(1)
    })
}

/// [`fmq_run_device`] whose device `factory` builds once the configuration is parsed (FairMQ's
/// `getDevice(config)`: it may read the configuration and log).
///
/// # Safety
/// As for `fmq_run_device`; `factory` is called once, on this thread, with `user`; the hooks and
/// the device pointer it gives may be used from this thread until the function returns.
#[no_mangle]
pub unsafe extern "C" fn fmq_run_device_factory(
    argc: i32,
    argv: *const *const c_char,
    factory: fmq_device_factory,
    options: *const fmq_option,
    n_options: usize,
    user: *mut c_void,
) -> i32 {
    guard_value(1, || {
        let r = (|| -> Result<i32, fmq_result> {
            // SAFETY: contract as documented.
            let args = unsafe { crate::transport::args(argc, argv)? };
            let f = factory.ok_or_else(|| fail(FMQ_ERROR_NULL, "factory is NULL"))?;
            // SAFETY: contract as documented.
            let opts = unsafe { custom_options(options, n_options)? };
            Ok(run_program(&args, opts, move |config| {
                let mut hooks = fmq_device_hooks::default();
                let mut device = std::ptr::null_mut();
                // SAFETY: the factory's contract; the configuration outlives the program's run.
                let rc = unsafe { f(config_ptr(config), user, &mut hooks, &mut device) };
                if rc == 0 {
                    Ok(CDevice { hooks, user: device })
                } else {
                    Err(format!("the factory returned {rc}").into())
                }
            }))
        })();
        r.unwrap_or(1)
    })
}

/// Runs `f` on the context inside the panic boundary; `default` when `ctx` is NULL (recorded) or
/// `f` panics.
fn with_ctx<T: Copy>(ctx: *const fmq_context, default: T, f: impl FnOnce(&Context) -> T) -> T {
    guard_value(default, || {
        // SAFETY: hooks receive a context valid for the call (contract of every fmq_context_* call).
        match unsafe { refp(ctx, "context") } {
            Ok(c) => f(&c.0),
            Err(_) => default,
        }
    })
}

/// [`with_ctx`] for calls that return a result code: `FMQ_ERROR_NULL` for a NULL context,
/// `FMQ_ERROR_PANIC` when `f` panics.
fn with_ctx_code(ctx: *const fmq_context, f: impl FnOnce(&Context) -> fmq_result) -> fmq_result {
    guard(|| {
        // SAFETY: hooks receive a context valid for the call (contract of every fmq_context_* call).
        match unsafe { refp(ctx, "context") } {
            Ok(c) => f(&c.0),
            Err(e) => e,
        }
    })
}

/// Registers single-message data handling for `channel` (call from init or init_task).
///
/// # Safety
/// `ctx` is the context of the running hook; `channel` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_on_data(ctx: *const fmq_context, channel: *const c_char) -> fmq_result {
    with_ctx_code(ctx, |c| {
        // SAFETY: contract as documented.
        match unsafe { str_arg(channel) } {
            Ok(name) => {
                c.on_data(name);
                FMQ_OK
            }
            Err(e) => e,
        }
    })
}

/// Registers multipart data handling for `channel`.
///
/// # Safety
/// As for `fmq_context_on_data`.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_on_data_parts(ctx: *const fmq_context, channel: *const c_char) -> fmq_result {
    with_ctx_code(ctx, |c| {
        // SAFETY: contract as documented.
        match unsafe { str_arg(channel) } {
            Ok(name) => {
                c.on_data_parts(name);
                FMQ_OK
            }
            Err(e) => e,
        }
    })
}

/// Whether a transition is pending (loops in hooks should end).
///
/// # Safety
/// `ctx` is the context of the running hook.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_new_state_pending(ctx: *const fmq_context) -> bool {
    with_ctx(ctx, true, |c| c.new_state_pending())
}

/// Sleeps up to `ms` unless a transition becomes pending; true if the full time passed.
///
/// # Safety
/// `ctx` is the context of the running hook.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_wait_for(ctx: *const fmq_context, ms: u64) -> bool {
    with_ctx(ctx, false, |c| c.wait_for(std::time::Duration::from_millis(ms)))
}

/// Sub-channel `index` of `name` (borrowed: valid during the hook; do not free), or NULL.
///
/// # Safety
/// `ctx` is the context of the running hook; `name` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_channel(
    ctx: *const fmq_context,
    name: *const c_char,
    index: usize,
) -> *const fmq_channel {
    with_ctx(ctx, std::ptr::null(), |c| {
        // SAFETY: contract as documented.
        let Ok(name) = (unsafe { str_arg(name) }) else { return std::ptr::null() };
        match c.channel(name, index) {
            Ok(ch) => (ch as *const fairmq::Channel).cast(),
            Err(e) => {
                set_last(e.to_string());
                std::ptr::null()
            }
        }
    })
}

/// Number of sub-channels of `name` (0 if unknown).
///
/// # Safety
/// As for `fmq_context_channel`.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_num_sub_channels(ctx: *const fmq_context, name: *const c_char) -> usize {
    with_ctx(ctx, 0, |c| {
        // SAFETY: contract as documented.
        unsafe { str_arg(name) }.map_or(0, |name| c.num_sub_channels(name).unwrap_or(0))
    })
}

/// The names of the device's channels, one per line, into `buf` (as `fmq_context_property` copies
/// text).
///
/// # Safety
/// `ctx` is the context of the running hook; `buf` NULL or valid for `len` bytes; `written` NULL
/// or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_channel_names(
    ctx: *const fmq_context,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    with_ctx_code(ctx, |c| {
        let names: Vec<&str> = c.channels().keys().map(String::as_str).collect();
        // SAFETY: contract as documented.
        unsafe { copy_out(&names.join("\n"), buf, len, written) }
    })
}

/// The device's default transport (borrowed), or NULL before INITIALIZING DEVICE completed.
///
/// # Safety
/// `ctx` is the context of the running hook.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_transport(ctx: *const fmq_context) -> *const fmq_transport {
    with_ctx(ctx, std::ptr::null(), |c| {
        c.transport().map_or(std::ptr::null(), |t| (t as *const fairmq::Transport).cast())
    })
}

/// A property (option or channel property) as text into `buf`.
///
/// # Safety
/// `ctx` is the context of the running hook; `key` NUL-terminated; `buf` valid for `len`; `written`
/// NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_property(
    ctx: *const fmq_context,
    key: *const c_char,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    with_ctx_code(ctx, |c| {
        // SAFETY: contract as documented; the configuration is the context's.
        unsafe { crate::config::fmq_config_property(config_ptr(c.shared_config()), key, buf, len, written) }
    })
}

/// A numeric property (integer, unsigned or float) as int64 into `*out`.
///
/// # Safety
/// As for `fmq_context_property`; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_property_int(
    ctx: *const fmq_context,
    key: *const c_char,
    out: *mut i64,
) -> fmq_result {
    with_ctx_code(ctx, |c| {
        // SAFETY: contract as documented.
        let key = match unsafe { str_arg(key) } {
            Ok(k) => k,
            Err(e) => return e,
        };
        if out.is_null() {
            return fail(FMQ_ERROR_NULL, "out is NULL");
        }
        let v = match c.config().get::<i64>(key) {
            Ok(v) => v,
            Err(e) => match c.config().get::<f64>(key) {
                // 2^63 is the first float beyond i64 (`as` would saturate there without a word).
                Ok(f) if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) => f as i64,
                Ok(f) => return fail(FMQ_ERROR_INVALID, format!("property '{key}' ({f}) does not fit an int64")),
                Err(_) => return fail(FMQ_ERROR_NOT_FOUND, e),
            },
        };
        // SAFETY: checked non-null, valid per contract.
        unsafe { *out = v };
        FMQ_OK
    })
}

/// The device id into `buf`.
///
/// # Safety
/// As for `fmq_context_property`.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_id(
    ctx: *const fmq_context,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    // SAFETY: contract as documented.
    with_ctx_code(ctx, |c| unsafe { copy_out(&c.id(), buf, len, written) })
}

/// Requests ErrorFound (the device goes to ERROR after the hook returns).
///
/// # Safety
/// `ctx` is the context of the running hook.
#[no_mangle]
pub unsafe extern "C" fn fmq_context_error_found(ctx: *const fmq_context) -> bool {
    with_ctx(ctx, false, |c| c.change_state(fairmq::Transition::ErrorFound))
}

/// The configuration of the running device (borrowed: valid as long as `ctx`).
///
/// # Safety
/// `ctx` is a valid context or NULL (then NULL is returned).
#[no_mangle]
pub unsafe extern "C" fn fmq_context_config(ctx: *const fmq_context) -> *const fmq_config {
    guard_value(std::ptr::null(), || {
        // SAFETY: contract as documented.
        unsafe { refp(ctx, "context") }.map_or(std::ptr::null(), |c| config_ptr(c.0.shared_config()))
    })
}
