//! Shared-memory layouts as types.
//!
//! Every object in shared memory is described once, as a `#[repr(C)]` struct of atomic words made
//! with [`shared_layout!`]; each layout asserts its documented offsets with `offset_of!` next to
//! its table. Such a struct is viewed in place over a mapping's words ([`view`]), and every object
//! is opened through one routine ([`Kind::open`]): its size, its [`Tag`] (magic and layout version)
//! and then what only that object can check (its size fields, id, owner).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Types that may be viewed over shared memory: `#[repr(C)]`, aligned to 8, without padding and
/// made only of [`AtomicU64`] (alone, in arrays or in other such structs). So every bit pattern is
/// a valid value, and what other processes write is only ever seen through atomics.
///
/// # Safety
/// Implement it only through [`shared_layout!`], which checks all of that at compile time.
pub(crate) unsafe trait Words: Sized {}

// SAFETY: one atomic word: 8 bytes, aligned to 8, any bit pattern valid.
unsafe impl Words for AtomicU64 {}
// SAFETY: an array of such types has no padding (their sizes are multiples of their alignment 8).
unsafe impl<T: Words, const N: usize> Words for [T; N] {}

/// Declares a `#[repr(C)]` struct of [`Words`] fields and implements [`Words`] for it, after
/// checking at compile time that every field is [`Words`] and that the struct has no padding.
macro_rules! shared_layout {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $($(#[$fmeta:meta])* $fvis:vis $field:ident: $ty:ty,)*
    }) => {
        $(#[$meta])*
        #[repr(C)]
        $vis struct $name {
            $($(#[$fmeta])* $fvis $field: $ty,)*
        }
        // SAFETY: `#[repr(C)]`, every field is `Words` and the size is the sum of the fields' (so
        // there is no padding), checked just below.
        unsafe impl $crate::sys::layout::Words for $name {}
        const _: () = {
            const fn words<T: $crate::sys::layout::Words>() {}
            $(words::<$ty>();)*
            assert!(std::mem::align_of::<$name>() == 8);
            assert!(std::mem::size_of::<$name>() == 0 $(+ std::mem::size_of::<$ty>())*);
        };
    };
}
pub(crate) use shared_layout;

/// The first `size_of::<T>()` bytes of `words` as a `T`, or `None` if `words` is shorter.
pub(crate) fn view<T: Words>(words: &[AtomicU64]) -> Option<&T> {
    if std::mem::size_of_val(words) < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: `words` is 8-aligned (atomic words) and long enough (checked); `T: Words` is made of
    // atomic words only, aligned to 8, without padding, so any content is a valid `T`; the result
    // borrows `words`, so it lives no longer than the memory does.
    Some(unsafe { &*words.as_ptr().cast::<T>() })
}

/// The bytes of a robust process-shared mutex in a layout (used through `Mapping::mutex`, never
/// as words).
pub(crate) type MutexPlace = [AtomicU64; 8];
const _: () = assert!(std::mem::size_of::<MutexPlace>() >= super::robust_mutex::MUTEX_BYTES);

shared_layout! {
    /// The first two words of every shared object: what it is, and the layout version that made it.
    pub(crate) struct Tag {
        /// Says what the object is; stored last, once the rest is complete.
        pub magic: AtomicU64,
        /// Bumped whenever the layout changes: builds of different layouts refuse each other's objects.
        pub layout: AtomicU64,
    }
}

/// What a shared object must be.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kind {
    /// Its name in errors ("managed segment").
    pub what: &'static str,
    pub magic: u64,
    pub layout: u64,
}

/// Why an object is not one this build can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mismatch {
    /// Fewer bytes than the layout needs.
    TooSmall { len: usize, needed: usize },
    /// Another kind of object, or one not complete yet.
    Magic { what: &'static str },
    /// Made by a build of another layout.
    Layout { found: u64, ours: u64 },
    /// The object's own fields disagree (with each other, the file, or what the opener expects).
    Fields(String),
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::TooSmall { len, needed } => write!(f, "size {len} is too small (at least {needed} bytes)"),
            Mismatch::Magic { what } => write!(f, "not a fairmq-rs {what}"),
            Mismatch::Layout { found, ours } => write!(f, "layout version {found} (this build uses {ours})"),
            Mismatch::Fields(reason) => f.write_str(reason),
        }
    }
}

impl Kind {
    /// Marks a new object, whose other fields are written, as complete: layout, then magic (with
    /// release, so whoever sees the magic sees the rest).
    pub(crate) fn stamp(&self, tag: &Tag) {
        tag.layout.store(self.layout, Ordering::Relaxed);
        tag.magic.store(self.magic, Ordering::Release);
    }

    /// Views `words` as an object of this kind whose layout `T` starts with its [`Tag`] (as
    /// `tag_of` returns it): checks the size, the magic and the layout version, then the object's
    /// own fields with `check`.
    pub(crate) fn open<'a, T: Words>(
        &self,
        words: &'a [AtomicU64],
        tag_of: impl FnOnce(&T) -> &Tag,
        check: impl FnOnce(&T) -> Result<(), String>,
    ) -> Result<&'a T, Mismatch> {
        let needed = std::mem::size_of::<T>();
        let object: &T = view(words).ok_or(Mismatch::TooSmall { len: std::mem::size_of_val(words), needed })?;
        let tag = tag_of(object);
        if tag.magic.load(Ordering::Acquire) != self.magic {
            return Err(Mismatch::Magic { what: self.what });
        }
        let found = tag.layout.load(Ordering::Relaxed);
        if found != self.layout {
            return Err(Mismatch::Layout { found, ours: self.layout });
        }
        check(object).map_err(Mismatch::Fields)?;
        Ok(object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    shared_layout! {
        struct Sample {
            tag: Tag,
            size: AtomicU64,
            table: [[AtomicU64; 2]; 3],
        }
    }
    const _: () = assert!(offset_of!(Sample, size) == 16 && offset_of!(Sample, table) == 24);

    const KIND: Kind = Kind { what: "sample", magic: 0x5a5a, layout: 3 };

    fn open(w: &[AtomicU64]) -> Result<&Sample, Mismatch> {
        KIND.open(
            w,
            |s: &Sample| &s.tag,
            |s| match s.size.load(Ordering::Relaxed) {
                64 => Ok(()),
                n => Err(format!("size {n}")),
            },
        )
    }

    #[test]
    fn an_object_opens_once_stamped_and_only_when_every_check_passes() {
        let w: Vec<AtomicU64> = (0..9).map(|_| AtomicU64::new(0)).collect();
        assert_eq!(open(&w[..8]).err(), Some(Mismatch::TooSmall { len: 64, needed: 72 }));
        assert_eq!(open(&w).err(), Some(Mismatch::Magic { what: "sample" }), "not stamped yet");
        let s: &Sample = view(&w).unwrap();
        s.size.store(64, Ordering::Relaxed);
        KIND.stamp(&s.tag);
        assert!(open(&w).is_ok());
        s.table[2][1].store(9, Ordering::Relaxed);
        assert_eq!(w[8].load(Ordering::Relaxed), 9, "fields lie where the layout says");
        s.size.store(65, Ordering::Relaxed);
        assert_eq!(open(&w).err(), Some(Mismatch::Fields("size 65".into())));
        s.tag.layout.store(2, Ordering::Relaxed);
        assert_eq!(open(&w).err(), Some(Mismatch::Layout { found: 2, ours: 3 }));
        assert_eq!(open(&w).err().unwrap().to_string(), "layout version 2 (this build uses 3)");
    }
}
