//! Shared-memory layouts as types.
//!
//! Every object in shared memory is described once, as a `#[repr(C)]` struct of atomic words made
//! with [`shared_layout!`]; each layout asserts its documented offsets with `offset_of!` next to
//! its table. Such a struct is viewed in place over a mapping's words ([`view`]), and every object
//! is opened through one routine ([`Kind::open`]): its size, its [`Tag`] (magic and layout version)
//! and then what only that object can check (its size fields, id, owner).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Types that may be viewed over shared memory.
///
/// Such a type is `#[repr(C)]`, aligned to 8 and without padding. It is made only of
/// [`AtomicU64`], alone, in arrays or in other such structs. So every bit pattern is a valid
/// value, and this process reads what other processes write only through atomics.
///
/// # Safety
/// Implement `Words` only through [`shared_layout!`], which checks all of these properties at
/// compile time.
pub(crate) unsafe trait Words: Sized {}

// SAFETY: `AtomicU64` is one atomic word: 8 bytes, aligned to 8, and any bit pattern is valid.
unsafe impl Words for AtomicU64 {}
// SAFETY: an array of `Words` types has no padding, because their sizes are multiples of their
// alignment, which is 8.
unsafe impl<T: Words, const N: usize> Words for [T; N] {}

/// Declares a `#[repr(C)]` struct of [`Words`] fields and implements [`Words`] for it.
/// `shared_layout!` also checks at compile time that every field is [`Words`] and that the struct
/// has no padding.
macro_rules! shared_layout {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $($(#[$fmeta:meta])* $fvis:vis $field:ident: $ty:ty,)*
    }) => {
        $(#[$meta])*
        #[repr(C)]
        $vis struct $name {
            $($(#[$fmeta])* $fvis $field: $ty,)*
        }
        // SAFETY: the struct is `#[repr(C)]` and every field is `Words`. Its size is the sum of its
        // fields' sizes, so it has no padding. The constant just below checks this.
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

/// Views the first `size_of::<T>()` bytes of `words` as a `T`. Returns `None` if `words` is
/// shorter.
pub(crate) fn view<T: Words>(words: &[AtomicU64]) -> Option<&T> {
    if std::mem::size_of_val(words) < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: `words` is 8-aligned, because it holds atomic words, and it is long enough (checked
    // above). `T: Words` is made only of atomic words, aligned to 8 and without padding, so any
    // content is a valid `T`. The result borrows `words`, so it lives no longer than the memory.
    Some(unsafe { &*words.as_ptr().cast::<T>() })
}

/// The bytes of a robust process-shared mutex in a layout. Code uses them only through
/// `Mapping::mutex`, never as words.
pub(crate) type MutexPlace = [AtomicU64; 8];
const _: () = assert!(std::mem::size_of::<MutexPlace>() >= super::robust_mutex::MUTEX_BYTES);

shared_layout! {
    /// The first two words of every shared object: what the object is, and the layout version
    /// that made it.
    pub(crate) struct Tag {
        /// Says what the object is. The creator stores it last, once the rest is complete.
        pub magic: AtomicU64,
        /// The layout version, bumped whenever the layout changes. Builds of different layouts
        /// refuse each other's objects.
        pub layout: AtomicU64,
    }
}

/// What a shared object must be: its name in errors, its magic and its layout version.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kind {
    /// The object's name in errors, such as "managed segment".
    pub what: &'static str,
    pub magic: u64,
    pub layout: u64,
}

/// Why this build cannot use an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mismatch {
    /// The object has fewer bytes than the layout needs.
    TooSmall { len: usize, needed: usize },
    /// The magic does not match: the object is of another kind, or it is not complete yet.
    Magic { what: &'static str },
    /// A build of another layout version made the object.
    Layout { found: u64, ours: u64 },
    /// The object's own fields disagree with each other, with the file, or with what the opener
    /// expects.
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
    /// Marks a new object as complete, once its other fields are written.
    ///
    /// `stamp` stores the layout version first and the magic last. It stores the magic with release
    /// ordering, so whoever sees the magic also sees the rest of the object.
    pub(crate) fn stamp(&self, tag: &Tag) {
        tag.layout.store(self.layout, Ordering::Relaxed);
        tag.magic.store(self.magic, Ordering::Release);
    }

    /// Views `words` as an object of this kind, with layout `T`.
    ///
    /// `T` starts with the object's [`Tag`], which `tag_of` returns. `open` checks the size, the
    /// magic and the layout version. Then it checks the object's own fields with `check`.
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
