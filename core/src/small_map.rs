//! [`SmallMap`]: a map of a few entries kept as a vector sorted by key. A leader's
//! followers and a broker's fetchers (one per leader it follows) are keyed by broker id
//! and hold a handful of entries, looked up once per partition of every fetch; a scan of a
//! short vector costs a fraction of a B-tree search. Iteration is in key order, as a
//! `BTreeMap`'s, so nothing that walks one can tell the two apart.

/// A map of a few entries, sorted by key (see the module doc).
#[derive(Clone, Debug)]
pub struct SmallMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
        }
    }
}

impl<K: Ord, V> SmallMap<K, V> {
    /// An empty map.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Where `key` is, or where it would go.
    fn find(&self, key: &K) -> Result<usize, usize> {
        // A forward scan: the maps are short, and the scan stops at the first key not below.
        for (i, (k, _)) in self.entries.iter().enumerate() {
            match k.cmp(key) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => return Ok(i),
                std::cmp::Ordering::Greater => return Err(i),
            }
        }
        Err(self.entries.len())
    }

    /// The value of `key`.
    #[must_use]
    pub fn get(&self, key: &K) -> Option<&V> {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    /// The value of `key`, mutably.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.find(key).ok().map(|i| &mut self.entries[i].1)
    }

    /// Sets `key` to `value`, returning the value it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// The value of `key`, inserted from `make` first if absent.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (key, make()));
                i
            }
        };
        &mut self.entries[i].1
    }
}

impl<K, V> SmallMap<K, V> {
    /// The entries in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&K, &V)> + DoubleEndedIterator {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// The values in key order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &V> + DoubleEndedIterator {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values in key order, mutably.
    pub fn values_mut(&mut self) -> impl ExactSizeIterator<Item = &mut V> + DoubleEndedIterator {
        self.entries.iter_mut().map(|(_, v)| v)
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for SmallMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = Self::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn answers_and_iterates_like_a_btree_map(
            ops in proptest::collection::vec((0u8..3, -2i32..7, 0u32..100), 0..200),
        ) {
            // Goal: over inserts, replacements and in-place updates of keys in no order,
            // every look-up (hits and misses) and the iteration order match a BTreeMap's.
            let mut small = SmallMap::new();
            let mut btree = BTreeMap::new();
            for (op, key, v) in ops {
                match op {
                    0 => prop_assert_eq!(small.insert(key, v), btree.insert(key, v)),
                    1 => {
                        *small.get_or_insert_with(key, || v) += 1;
                        *btree.entry(key).or_insert(v) += 1;
                    }
                    _ => {
                        if let Some(x) = small.get_mut(&key) {
                            *x += 3;
                        }
                        if let Some(x) = btree.get_mut(&key) {
                            *x += 3;
                        }
                    }
                }
                for probe in -3..8 {
                    prop_assert_eq!(small.get(&probe), btree.get(&probe));
                }
                prop_assert!(small.iter().eq(btree.iter()));
                prop_assert!(small.values().eq(btree.values()));
            }
            let collected: SmallMap<i32, u32> = btree.clone().into_iter().rev().collect();
            prop_assert!(collected.iter().eq(btree.iter()));
        }
    }
}
