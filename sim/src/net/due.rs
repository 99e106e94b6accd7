//! [`DueQueue`]: the in-flight messages, ordered by (deliver-at, send seq). Messages are
//! large (a whole request or response), so they sit still in a slab and only a small key
//! moves in the heap: an ordered map of the messages themselves shifted whole messages
//! inside its nodes on every insert and remove (about 500 instructions a send). The order
//! is total (a seq is unique per network), so delivery order is what the map gave.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Items keyed by `(at, seq)`, taken out earliest first (`A` is the network's `Instant`).
pub(super) struct DueQueue<A, T> {
    heap: BinaryHeap<Reverse<(A, u64, usize)>>,
    slab: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<A: Ord, T> Default for DueQueue<A, T> {
    fn default() -> Self {
        Self {
            heap: BinaryHeap::new(),
            slab: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<A: Ord + Copy, T> DueQueue<A, T> {
    /// Adds `item` due at `at`; `seq` must be unique among the queued items.
    pub(super) fn push(&mut self, at: A, seq: u64, item: T) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i] = Some(item);
                i
            }
            None => {
                self.slab.push(Some(item));
                self.slab.len() - 1
            }
        };
        self.heap.push(Reverse((at, seq, slot)));
    }

    /// When the earliest item is due.
    pub(super) fn first_due(&self) -> Option<A> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    /// Takes the earliest item if it is due at or before `now`.
    pub(super) fn pop_due(&mut self, now: A) -> Option<T> {
        let Reverse((at, _, slot)) = *self.heap.peek()?;
        if at > now {
            return None;
        }
        self.heap.pop();
        self.free.push(slot);
        self.slab[slot].take()
    }

    /// Number of queued items.
    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Drops every item.
    pub(super) fn clear(&mut self) {
        self.heap.clear();
        self.slab.clear();
        self.free.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn takes_items_in_the_order_an_ordered_map_of_at_and_seq_gives(
            ops in proptest::collection::vec((any::<bool>(), 0u64..50), 0..300),
        ) {
            // Goal: interleaved pushes and takes (ties in time broken by seq, slots reused)
            // hand out exactly what a `BTreeMap<(at, seq), _>` would, in the same order.
            let mut q = DueQueue::default();
            let mut m = BTreeMap::new();
            let (mut seq, mut now) = (0u64, 0u64);
            for (push, d) in ops {
                if push {
                    q.push(now + d, seq, seq);
                    m.insert((now + d, seq), seq);
                    seq += 1;
                } else {
                    now += d % 20;
                    loop {
                        let want = m
                            .first_key_value()
                            .filter(|((at, _), _)| *at <= now)
                            .map(|(k, _)| *k);
                        prop_assert_eq!(q.pop_due(now), want.and_then(|k| m.remove(&k)));
                        if want.is_none() {
                            break;
                        }
                    }
                }
                prop_assert_eq!(q.len(), m.len());
                prop_assert_eq!(q.first_due(), m.first_key_value().map(|((at, _), _)| *at));
            }
            q.clear();
            prop_assert_eq!((q.len(), q.first_due()), (0, None));
        }
    }
}
