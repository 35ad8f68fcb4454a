//! Channels set up step by step, as FairMQ's `fair::mq::Channel` is.
//!
//! 1. [`fmq_channel_validate`] checks a configuration on its own, as FairMQ's `Channel::Validate`
//!    does.
//! 2. [`fmq_channel_create`] makes the channel's socket without binding or connecting it. So its
//!    options can be set and read first ([`fmq_channel_set_option`], [`fmq_channel_get_option`]).
//! 3. [`fmq_channel_attach`] binds or connects it, as FairMQ's `Channel::Bind(address)` or
//!    `Channel::Connect(address)` does.
//!
//! Each call takes at most one sub-channel: a `--channel-config` token with at most one
//! `address=` key.

use crate::channel::fmq_channel;
use crate::error::*;
use crate::ptr::*;
use crate::transport::fmq_transport;
use fairmq::{Channel, ChannelConfig};
use std::ffi::c_char;

/// The one sub-channel a `--channel-config` token describes (one address at most).
fn one_sub_channel(spec: &str) -> Result<ChannelConfig, fmq_result> {
    let mut subs =
        fairmq::channel_parsers::parse_channel_config(&[spec.to_owned()]).map_err(|e| fail(FMQ_ERROR_CONFIG, e))?;
    if subs.len() != 1 {
        return Err(fail(FMQ_ERROR_CONFIG, "one sub-channel per call: give at most one address= key"));
    }
    Ok(subs.remove(0))
}

/// Validates the channel configuration `spec` (a `--channel-config` token with at most one address)
/// as FairMQ's `Channel::Validate`: `FMQ_OK` with `*valid` true when it can attach, false when its
/// address is unspecified or no usable endpoint (`fmq_last_error` says why); `FMQ_ERROR_CONFIG` for
/// what can never work (an unknown type or method, a negative size, an illegal name).
///
/// # Safety
/// `spec` NUL-terminated; `valid` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_validate(spec: *const c_char, valid: *mut bool) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let (spec, valid) = unsafe { (str_arg(spec)?, mutp(valid, "valid")?) };
            let cfg = one_sub_channel(spec)?;
            *valid = cfg.validate().map_err(|e| fail(FMQ_ERROR_CONFIG, e))?;
            if !*valid {
                set_last(format!("channel {} is not valid (address '{}')", cfg.name(), cfg.address));
            }
            Ok(FMQ_OK)
        })())
    })
}

/// Makes a channel's socket on `t` from the configuration `spec` (as `fmq_channel_new` takes it)
/// without binding or connecting it: method and address may be left out, and are given by
/// `fmq_channel_attach`. Its options apply to the socket at once.
///
/// # Safety
/// `t` valid; `spec` NUL-terminated; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_create(
    t: *const fmq_transport,
    spec: *const c_char,
    out: *mut *mut fmq_channel,
) -> fmq_result {
    guard(|| {
        code((|| {
            check_out(out)?;
            // SAFETY: contracts as documented.
            let (t, spec) = unsafe { (refp(t, "transport")?, str_arg(spec)?) };
            let cfg = one_sub_channel(spec)?;
            let ch = Channel::new(cfg, t.0.clone()).map_err(fail_kind)?;
            // SAFETY: `out` checked.
            unsafe { give(out, fmq_channel(ch)) };
            Ok(FMQ_OK)
        })())
    })
}

/// Binds or connects a channel (`method` "bind" or "connect") to `address` (endpoints separated by
/// ';'), as FairMQ's `Channel::Bind`/`Connect`. `FMQ_ERROR_CONFIG` when the address is not usable,
/// a transport error when the socket refuses it; `fmq_channel_address` tells the address attached.
///
/// # Safety
/// `c` an owned channel handle, used by no other thread meanwhile; the strings NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_attach(
    c: *mut fmq_channel,
    method: *const c_char,
    address: *const c_char,
) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let (c, method, address) = unsafe { (mutp(c, "channel")?, str_arg(method)?, str_arg(address)?) };
            if method != "bind" && method != "connect" {
                return Err(fail(FMQ_ERROR_INVALID, format!("method '{method}' is neither bind nor connect")));
            }
            c.0.attach_to(method, address).map_err(fail_kind)?;
            Ok(FMQ_OK)
        })())
    })
}

/// The channel's full name (`data[0]`), NUL-terminated into `buf`.
///
/// # Safety
/// `c` a valid channel; `buf` valid for `len` bytes; `written` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_name(
    c: *const fmq_channel,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> fmq_result {
    guard(|| {
        // SAFETY: contracts as documented.
        code(unsafe { refp(c, "channel") }.map(|c| unsafe { copy_out(&c.0.name(), buf, len, written) }))
    })
}

/// The socket options FairMQ's `Socket::SetOption`/`GetOption` name, as fields of a channel.
fn option_field<'a>(cfg: &'a mut ChannelConfig, name: &str) -> Result<&'a mut i32, fmq_result> {
    Ok(match name {
        "linger" => &mut cfg.linger,
        "snd-hwm" => &mut cfg.snd_buf_size,
        "rcv-hwm" => &mut cfg.rcv_buf_size,
        "snd-size" => &mut cfg.snd_kernel_size,
        "rcv-size" => &mut cfg.rcv_kernel_size,
        _ => {
            return Err(fail(
                FMQ_ERROR_INVALID,
                format!("unknown socket option '{name}' (linger, snd-hwm, rcv-hwm, snd-size, rcv-size)"),
            ))
        }
    })
}

/// Sets socket option `name` ("linger" ms, "snd-hwm"/"rcv-hwm" queue lengths in messages,
/// "snd-size"/"rcv-size" kernel buffers in bytes) of an owned channel.
///
/// # Safety
/// `c` an owned channel handle, used by no other thread meanwhile; `name` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_set_option(c: *mut fmq_channel, name: *const c_char, value: i32) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let (c, name) = unsafe { (mutp(c, "channel")?, str_arg(name)?) };
            if value < -1 {
                return Err(fail(FMQ_ERROR_INVALID, format!("socket option '{name}': {value} is negative")));
            }
            let mut refused = None;
            c.0.update_socket_options(|cfg| match option_field(cfg, name) {
                Ok(field) => *field = value,
                Err(e) => refused = Some(e),
            })
            .map_err(fail_kind)?;
            refused.map_or(Ok(FMQ_OK), Err)
        })())
    })
}

/// The value of socket option `name` (see `fmq_channel_set_option`) into `*value`.
///
/// # Safety
/// `c` a valid channel; `name` NUL-terminated; `value` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn fmq_channel_get_option(
    c: *const fmq_channel,
    name: *const c_char,
    value: *mut i32,
) -> fmq_result {
    guard(|| {
        code((|| {
            // SAFETY: contract as documented.
            let (c, name, value) = unsafe { (refp(c, "channel")?, str_arg(name)?, mutp(value, "value")?) };
            let mut cfg = c.0.config().clone();
            *value = *option_field(&mut cfg, name)?;
            Ok(FMQ_OK)
        })())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::{fmq_channel_connected_peers, fmq_channel_free};
    use crate::transport::{fmq_transport_free, fmq_transport_new};
    use std::ffi::CString;

    fn validate(spec: &str) -> Result<bool, fmq_result> {
        let spec = CString::new(spec).unwrap();
        let mut valid = false;
        // SAFETY: valid arguments.
        match unsafe { fmq_channel_validate(spec.as_ptr(), &mut valid) } {
            FMQ_OK => Ok(valid),
            e => Err(e),
        }
    }

    #[test]
    fn validation_is_fairmqs() {
        assert_eq!(validate("name=c"), Err(FMQ_ERROR_CONFIG), "no type");
        assert_eq!(validate("name=c,type=pair"), Ok(false), "no address");
        assert_eq!(validate("name=c,type=pair,address=bla"), Err(FMQ_ERROR_CONFIG), "no method for a plain address");
        for bad in ["ipc://", "inproc://", "tcp://", "verbs://"] {
            assert_eq!(validate(&format!("name=c,type=pair,method=connect,address={bad}")), Ok(false), "{bad}");
        }
        assert_eq!(validate("name=c,type=pair,method=connect,address=tcp://localhost:5555"), Ok(true));
        assert_eq!(
            validate("name=c,type=pair,method=connect,address=tcp://localhost:5555,sndBufSize=-1"),
            Err(FMQ_ERROR_CONFIG)
        );
        assert_eq!(
            validate("name=c,type=pair,method=connect,address=tcp://localhost:5555,rateLogging=-1"),
            Err(FMQ_ERROR_CONFIG)
        );
    }

    struct Owned(*mut fmq_transport, Vec<*mut fmq_channel>);
    impl Drop for Owned {
        fn drop(&mut self) {
            // SAFETY: handles made by the test, freed once (channels before their transport).
            unsafe {
                for c in self.1.drain(..) {
                    fmq_channel_free(c);
                }
                fmq_transport_free(self.0);
            }
        }
    }

    fn create(t: *const fmq_transport, spec: &str) -> *mut fmq_channel {
        let spec = CString::new(spec).unwrap();
        let mut c = std::ptr::null_mut();
        // SAFETY: valid arguments.
        assert_eq!(unsafe { fmq_channel_create(t, spec.as_ptr(), &mut c) }, FMQ_OK);
        c
    }

    #[test]
    fn options_are_set_before_attaching_and_a_pair_connects_by_its_address() {
        let mut t = std::ptr::null_mut();
        // SAFETY: valid arguments.
        let made =
            unsafe { fmq_transport_new(c"zeromq".as_ptr(), c"setup-test".as_ptr(), 0, std::ptr::null(), &mut t) };
        assert_eq!(made, FMQ_OK);
        let mut owned = Owned(t, Vec::new());
        let a = create(t, "name=a,type=pair");
        owned.1.push(a);
        for name in [c"linger", c"snd-hwm", c"rcv-hwm", c"snd-size", c"rcv-size"] {
            let mut v = 0;
            // SAFETY: valid handle and names.
            unsafe {
                assert_eq!(fmq_channel_set_option(a, name.as_ptr(), 500), FMQ_OK);
                assert_eq!(fmq_channel_get_option(a, name.as_ptr(), &mut v), FMQ_OK);
            }
            assert_eq!(v, 500, "{name:?}");
        }
        let mut v = 0;
        // SAFETY: valid handle and names.
        unsafe {
            assert_eq!(fmq_channel_set_option(a, c"nope".as_ptr(), 1), FMQ_ERROR_INVALID);
            assert_eq!(fmq_channel_get_option(a, c"nope".as_ptr(), &mut v), FMQ_ERROR_INVALID);
        }
        let address = format!("ipc:///tmp/fmq-rs-channel-setup-{}", std::process::id());
        let addr = CString::new(address).unwrap();
        let b = create(t, "name=b,type=pair");
        owned.1.push(b);
        // SAFETY: valid handles and strings.
        unsafe {
            assert_eq!(fmq_channel_attach(a, c"bind".as_ptr(), c"bla".as_ptr()), FMQ_ERROR_CONFIG);
            assert_eq!(fmq_channel_attach(a, c"sideways".as_ptr(), addr.as_ptr()), FMQ_ERROR_INVALID);
            assert_eq!(fmq_channel_attach(a, c"bind".as_ptr(), addr.as_ptr()), FMQ_OK);
            assert_eq!(fmq_channel_attach(b, c"connect".as_ptr(), addr.as_ptr()), FMQ_OK);
        }
        // Counters carry their size: one the caller did not set is refused.
        let mut counters = crate::channel::fmq_counters::default();
        // SAFETY: a valid channel and out pointer.
        assert_eq!(unsafe { crate::channel::fmq_channel_counters(a, &mut counters) }, FMQ_ERROR_INVALID);
        counters.struct_size = size_of::<crate::channel::fmq_counters>() as u32;
        // SAFETY: as above.
        assert_eq!(unsafe { crate::channel::fmq_channel_counters(a, &mut counters) }, FMQ_OK);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // SAFETY: valid handles.
        while unsafe { fmq_channel_connected_peers(a) + fmq_channel_connected_peers(b) } < 2 {
            assert!(std::time::Instant::now() < deadline, "the pair never saw each other");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}
