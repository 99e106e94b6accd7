//! Rolling FNV-1a 64-bit hash of the trace.
//!
//! FNV-1a is fixed by its spec (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`),
//! so a hash printed today can be compared with one printed by a later toolchain. It is not
//! collision resistant; it only has to make accidental divergence visible.

use std::fmt;

/// FNV-1a 64 offset basis.
const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64 prime.
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// A rolling FNV-1a 64 hash. Feeding bytes in several `update` calls gives the same result as
/// one call with their concatenation.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TraceHash {
    state: u64,
}

impl Default for TraceHash {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceHash {
    /// A hash of the empty input.
    #[must_use]
    pub fn new() -> Self {
        Self {
            state: OFFSET_BASIS,
        }
    }

    /// Folds `bytes` into the hash: for each byte, xor then multiply (the "1a" order).
    pub fn update(&mut self, bytes: &[u8]) {
        let mut h = self.state;
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
        self.state = h;
    }

    /// The hash of everything fed so far (the hash stays usable afterwards).
    #[must_use]
    pub fn finish(&self) -> u64 {
        self.state
    }

    /// The hash as 16 lowercase hex digits, the form printed in run footers.
    #[must_use]
    pub fn hex(&self) -> String {
        format!("{:016x}", self.state)
    }
}

impl fmt::Display for TraceHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fnv(bytes: &[u8]) -> TraceHash {
        let mut h = TraceHash::new();
        h.update(bytes);
        h
    }

    #[test]
    fn matches_published_fnv1a_64_vectors() {
        // Goal: the algorithm is exactly FNV-1a 64 (vectors from the FNV reference suite).
        assert_eq!(fnv(b"").finish(), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a").finish(), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv(b"foobar").finish(), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn rolling_updates_equal_one_update() {
        // Goal: hashing line by line equals hashing the concatenated trace.
        let mut h = TraceHash::new();
        h.update(b"foo");
        h.update(b"");
        h.update(b"bar");
        assert_eq!(h, fnv(b"foobar"));
    }

    #[test]
    fn hex_is_sixteen_zero_padded_digits() {
        // Goal: footers always print 16 digits, even with leading zeros.
        let h = TraceHash { state: 0xab };
        assert_eq!(h.hex(), "00000000000000ab");
        assert_eq!(h.to_string(), "00000000000000ab");
        assert_eq!(fnv(b"a").hex(), "af63dc4c8601ec8c");
    }
}
