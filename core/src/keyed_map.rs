//! [`KeyedMap`]: a map that iterates in key order, like a `BTreeMap`, and finds a key by
//! hash; [`PartitionMap`] is one keyed by [`TopicPartition`].
//!
//! A broker's per-partition maps are searched once per partition entry of every fetch, on
//! both sides; in a big world those searches were a fifth of all instructions (a `BTreeMap`
//! search compares 8-10 keys). Walks (building a fetch, a metadata change) need key order,
//! so the entries stay in a sorted vector; a hash index with a fixed hasher (no random
//! state) finds a key's slot. Nothing iterates the index, so its order never reaches a
//! result or a trace.

use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ops;

use crate::types::TopicPartition;

// The workspace bans `HashMap` because its iteration order is not deterministic. Here it
// is the index only: private, never iterated (walks and `Debug` read `entries`), with a
// fixed hasher, so no order it holds can reach a result or a trace.
#[expect(
    clippy::disallowed_types,
    reason = "a never-iterated index with a fixed hasher; see above"
)]
type Index<K> = std::collections::HashMap<K, usize, BuildHasherDefault<KeyHasher>>;

/// A seed-free multiplicative hasher (FxHash's rule), for the index only: a key's hash
/// picks a bucket, never an order anything reads.
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl KeyHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for KeyHasher {
    /// The raw state: its low bits (hashbrown's bucket) depend only on the low bits of the
    /// words fed, which suits the keys it serves (partition numbers, node ids, hashes). Byte
    /// strings that share their first bytes would share a bucket: hash such keys to a `u64`
    /// first (as `check::outcomes` does with record values).
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("chunks_exact(8)")));
        }
        // The length keeps "a" + index 0 apart from "a\0" + ...; the tail is read a byte at
        // a time (a `copy_from_slice` of a variable length is a `memcpy` call).
        let mut tail = (bytes.len() as u64) << 56;
        for (i, b) in chunks.remainder().iter().enumerate() {
            tail ^= u64::from(*b) << (8 * i);
        }
        self.add(tail);
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_i32(&mut self, i: i32) {
        self.add(u64::from(i.cast_unsigned()));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

/// A map from `K` to `V`: iteration in key order, look-up by hash.
///
/// Entries live in `entries`, sorted by key; `index` maps a key to its position. An insert
/// or remove of a new key shifts the positions after it (O(n)); the keys it serves
/// (partitions, a node's partitions) are added and removed rarely, looked up constantly.
#[derive(Clone)]
pub struct KeyedMap<K, V> {
    entries: Vec<(K, V)>,
    index: Index<K>,
}

/// A [`KeyedMap`] keyed by partition: a broker's partitions, a fetch session's.
pub type PartitionMap<V> = KeyedMap<TopicPartition, V>;

impl<K, V> Default for KeyedMap<K, V> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            index: Index::default(),
        }
    }
}

impl<K: Ord + Hash + Clone, V> KeyedMap<K, V> {
    /// An empty map.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value for `key`.
    #[must_use]
    pub fn get(&self, key: &K) -> Option<&V> {
        let i = *self.index.get(key)?;
        Some(&self.entries[i].1)
    }

    /// The value for `key`, mutably.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let i = *self.index.get(key)?;
        Some(&mut self.entries[i].1)
    }

    /// True if `key` has a value.
    #[must_use]
    pub fn contains_key(&self, key: &K) -> bool {
        self.index.contains_key(key)
    }

    /// Sets the value for `key`; returns the one it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.index.get(&key) {
            Some(&i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            None => {
                self.insert_new(key, value);
                None
            }
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let at = self.index.remove(key)?;
        let (_, value) = self.entries.remove(at);
        self.reindex_from(at);
        Some(value)
    }

    /// The value for `key`, inserted by `make` if absent.
    pub fn get_or_insert_with(&mut self, key: &K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.index.get(key) {
            Some(&i) => i,
            None => self.insert_new(key.clone(), make()),
        };
        &mut self.entries[i].1
    }

    /// Inserts a key that is not in the map; returns its position.
    fn insert_new(&mut self, key: K, value: V) -> usize {
        let at = self.entries.partition_point(|(k, _)| *k < key);
        self.entries.insert(at, (key.clone(), value));
        self.index.insert(key, at);
        self.reindex_from(at + 1);
        at
    }

    /// Points the index at the entries from `at` on, after a shift.
    fn reindex_from(&mut self, at: usize) {
        for (i, (k, _)) in self.entries.iter().enumerate().skip(at) {
            *self.index.get_mut(k).expect("index_covers_entries") = i;
        }
    }

    /// Keeps the entries `keep` accepts, in key order.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        let index = &mut self.index;
        let before = self.entries.len();
        self.entries.retain_mut(|(k, v)| {
            let kept = keep(k, v);
            if !kept {
                index.remove(k);
            }
            kept
        });
        if self.entries.len() != before {
            self.reindex_from(0);
        }
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> + Clone {
        self.into_iter()
    }

    /// Entries in key order, values mutable.
    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = (&K, &mut V)> {
        self.into_iter()
    }

    /// Keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + Clone {
        self.entries.iter().map(|(k, _)| k)
    }

    /// Values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + Clone {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Values in key order, mutable.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }
}

impl<K: Ord + Hash + Clone, V> ops::Index<&K> for KeyedMap<K, V> {
    type Output = V;

    fn index(&self, key: &K) -> &V {
        self.get(key).expect("no entry for the key")
    }
}

impl<K: Ord + Hash + Clone + fmt::Debug, V: fmt::Debug> fmt::Debug for KeyedMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Ord + Hash + Clone, V> FromIterator<(K, V)> for KeyedMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = Self::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

impl<'a, K, V> IntoIterator for &'a KeyedMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

impl<'a, K, V> IntoIterator for &'a mut KeyedMap<K, V> {
    type Item = (&'a K, &'a mut V);
    type IntoIter =
        std::iter::Map<std::slice::IterMut<'a, (K, V)>, fn(&'a mut (K, V)) -> (&'a K, &'a mut V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter_mut().map(|(k, v)| (&*k, v))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    #[test]
    fn agrees_with_a_btree_map_under_inserts_removes_and_retains() {
        // Goal: every look-up and every walk answers as a `BTreeMap` does, whatever order
        // the keys came in, across replacing inserts, removals and a retain.
        let mut m = PartitionMap::new();
        let mut b = BTreeMap::new();
        let names = ["t1", "t0", "__mirror_state", "t10", "a"];
        let mut x: u64 = 7;
        for step in 0..2_000u64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let key = tp(
                names[(x >> 33) as usize % names.len()],
                ((x >> 40) % 13) as i32,
            );
            match (x >> 20) % 7 {
                0 | 1 => assert_eq!(m.remove(&key), b.remove(&key)),
                2 if step % 50 == 0 => {
                    m.retain(|k, v| (k.partition + *v as i32) % 3 != 0);
                    b.retain(|k: &TopicPartition, v: &mut u64| (k.partition + *v as i32) % 3 != 0);
                }
                3 => {
                    *m.get_or_insert_with(&key, || step) += 1;
                    *b.entry(key.clone()).or_insert(step) += 1;
                }
                _ => assert_eq!(m.insert(key.clone(), step), b.insert(key.clone(), step)),
            }
            assert_eq!(m.get(&key), b.get(&key));
            assert_eq!(m.contains_key(&key), b.contains_key(&key));
            assert_eq!(m.len(), b.len());
        }
        assert!(m.iter().eq(b.iter()));
        assert!(m.keys().rev().eq(b.keys().rev()));
        for v in m.values_mut() {
            *v += 1;
        }
        for (k, v) in &b {
            assert_eq!(m[k], v + 1);
        }
    }
}
