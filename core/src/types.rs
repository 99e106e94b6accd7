//! Kafka's scalar types as newtypes with Kafka's wire widths.
//!
//! Fields are public so tests transcribed from Kafka can build values directly
//! (`Offset(5)`, `LeaderEpoch(3)`); the sentinels Kafka uses on the wire are
//! named constants (`LeaderEpoch::UNDEFINED`, `Offset::UNDEFINED`).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

macro_rules! newtype {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub $inner);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl From<$inner> for $name {
            fn from(v: $inner) -> Self {
                Self(v)
            }
        }
    };
}

newtype!(
    /// A position in a partition log. 0-based; LEO, HW, LSO and "end offsets" are exclusive.
    Offset(i64)
);
newtype!(
    /// A partition leader epoch, stamped on every v2 batch (`partitionLeaderEpoch`).
    LeaderEpoch(i32)
);
newtype!(
    /// An idempotent/transactional producer id. `-1` means "no producer".
    ProducerId(i64)
);
newtype!(
    /// A producer epoch. `-1` means "no epoch" (`NO_PRODUCER_EPOCH`).
    ProducerEpoch(i16)
);
newtype!(
    /// A per-producer record sequence number. `-1` means "no sequence".
    Sequence(i32)
);
newtype!(
    /// A broker (or controller) node id.
    BrokerId(i32)
);

impl Offset {
    /// Kafka's `UNDEFINED_EPOCH_OFFSET` (-1), used by the epoch cache's `end_offset_for`.
    pub const UNDEFINED: Offset = Offset(-1);

    /// `self + n`. Offsets never overflow in practice; overflow is a broken invariant.
    #[must_use]
    pub fn plus(self, n: i64) -> Offset {
        Offset(self.0.checked_add(n).expect("offset_overflow"))
    }
}

impl LeaderEpoch {
    /// Kafka's `UNDEFINED_EPOCH` (-1).
    pub const UNDEFINED: LeaderEpoch = LeaderEpoch(-1);
}

impl ProducerId {
    /// Kafka's `NO_PRODUCER_ID` (-1).
    pub const NONE: ProducerId = ProducerId(-1);

    /// True for a real producer id (Kafka's `hasProducerId`: `producerId > -1`).
    #[must_use]
    pub fn is_some(self) -> bool {
        self.0 > -1
    }
}

impl ProducerEpoch {
    /// Kafka's `NO_PRODUCER_EPOCH` (-1).
    pub const NONE: ProducerEpoch = ProducerEpoch(-1);
}

impl Sequence {
    /// Kafka's `NO_SEQUENCE` (-1).
    pub const NONE: Sequence = Sequence(-1);

    /// The sequence `n` records after this one, wrapping at `i32::MAX` as Kafka does
    /// (`DefaultRecordBatch.incrementSequence`).
    #[must_use]
    pub fn increment(self, n: i32) -> Sequence {
        // Java int arithmetic: a client may send any sequence, and Kafka's wraps.
        if self.0 > i32::MAX.wrapping_sub(n) {
            Sequence(
                n.wrapping_sub(i32::MAX.wrapping_sub(self.0))
                    .wrapping_sub(1),
            )
        } else {
            Sequence(self.0.wrapping_add(n))
        }
    }

    /// The sequence `n` records before this one, wrapping as Kafka does
    /// (`DefaultRecordBatch.decrementSequence`).
    #[must_use]
    pub fn decrement(self, n: i32) -> Sequence {
        // Java int arithmetic, as in `increment` (a first sequence near `i32::MIN` overflowed
        // `n - self` here: RPC fuzz).
        if self.0 < n {
            Sequence(
                i32::MAX
                    .wrapping_sub(n.wrapping_sub(self.0))
                    .wrapping_add(1),
            )
        } else {
            Sequence(self.0.wrapping_sub(n))
        }
    }
}

/// A 128-bit topic id (Kafka's `Uuid`). Zero means "no id" (pre-2.8 topics).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicId(pub u128);

impl TopicId {
    /// Kafka's `Uuid.ZERO_UUID`.
    pub const ZERO: TopicId = TopicId(0);
}

impl fmt::Display for TopicId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// A topic name and partition index, displayed as Kafka does: `orders-0`.
///
/// Ordered by topic name (bytewise) then index, as a derive would, but by hand: the key
/// of every per-partition map, so its comparison and hash are the hottest code in a big
/// world. [`TopicPartition::new`] interns the name in one process-wide table, which also
/// numbers it: two keys of one topic share one `Arc` and one number, so equality and the
/// hash read two integers, and an order between two keys of one topic never reads a name.
/// Names are compared bytewise only between different topics.
#[derive(Clone, Debug)]
pub struct TopicPartition {
    /// Topic name. Shared, because the same name appears in many maps.
    pub topic: Arc<str>,
    /// Partition index, 0-based.
    pub partition: i32,
    /// The name's number in [`TOPIC_NAMES`]: equal exactly when the names are. Private, so
    /// every key is built by [`TopicPartition::new`].
    name: u32,
}

/// Topic names handed out by [`TopicPartition::new`], with their numbers (in first-use
/// order). One per distinct name for the life of the process: a sweep's worlds use a few
/// names each, mostly the same ones. Only equality and the hash read a number, and no
/// result reads a hash (see [`crate::keyed_map`]), so the numbering, which depends on which
/// thread of a parallel sweep met a name first, changes nothing a run reports.
static TOPIC_NAMES: Mutex<BTreeMap<Arc<str>, u32>> = Mutex::new(BTreeMap::new());

/// The process's one `Arc` for `name`, and its number.
fn intern_topic(name: &str) -> (Arc<str>, u32) {
    // A panic while the lock was held cannot leave the table half-written (one insert).
    let mut names = TOPIC_NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((n, id)) = names.get_key_value(name) {
        return (Arc::clone(n), *id);
    }
    let id = u32::try_from(names.len()).expect("fewer than 2^32 topic names");
    let n: Arc<str> = Arc::from(name);
    names.insert(Arc::clone(&n), id);
    (n, id)
}

impl TopicPartition {
    /// Builds `topic-partition`, with the process's shared allocation of the name.
    pub fn new(topic: impl AsRef<str>, partition: i32) -> Self {
        let (topic, name) = intern_topic(topic.as_ref());
        Self {
            topic,
            partition,
            name,
        }
    }
}

impl Ord for TopicPartition {
    fn cmp(&self, other: &Self) -> Ordering {
        if self.name == other.name {
            return self.partition.cmp(&other.partition);
        }
        self.topic.bytes().cmp(other.topic.bytes())
    }
}

impl PartialOrd for TopicPartition {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for TopicPartition {
    fn eq(&self, other: &Self) -> bool {
        self.partition == other.partition && self.name == other.name
    }
}

impl Eq for TopicPartition {}

/// Hashes the name's number and the index as one word. Equal keys have equal numbers; no
/// result reads a hash (the only hashed collection, [`crate::keyed_map`]'s index, is never
/// iterated).
impl Hash for TopicPartition {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64((u64::from(self.name) << 32) | u64::from(self.partition.cast_unsigned()));
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// The pair Kafka's `OffsetAndEpoch` / `EpochEndOffset` carries: an end offset and the
/// epoch it belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct OffsetAndEpoch {
    /// The (exclusive) end offset.
    pub offset: Offset,
    /// The epoch that ends there.
    pub leader_epoch: LeaderEpoch,
}

impl OffsetAndEpoch {
    /// Builds the pair.
    #[must_use]
    pub fn new(offset: Offset, leader_epoch: LeaderEpoch) -> Self {
        Self {
            offset,
            leader_epoch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_wraps_like_kafka() {
        // Kafka: DefaultRecordBatchTest.testIncrementSequence / testDecrementSequence
        assert_eq!(Sequence(10).increment(5), Sequence(15));
        assert_eq!(Sequence(i32::MAX).increment(1), Sequence(0));
        assert_eq!(Sequence(i32::MAX - 2).increment(5), Sequence(2));
        assert_eq!(Sequence(0).decrement(1), Sequence(i32::MAX));
        assert_eq!(Sequence(2).decrement(5), Sequence(i32::MAX - 2));
        assert_eq!(Sequence(2).decrement(5).increment(5), Sequence(2));
    }

    /// Regression (RPC fuzz): an idempotent batch whose base sequence is near `i32::MIN`
    /// overflowed `decrement` when producer state derived the batch's first sequence from its
    /// last. Both directions wrap as Java's int arithmetic does.
    #[test]
    fn sequence_arithmetic_on_client_sequences_near_the_extremes_does_not_overflow() {
        let last = Sequence(i32::MIN).increment(3);
        assert_eq!(last, Sequence(i32::MIN + 3));
        // Kafka's `decrementSequence` assumes a non-negative sequence: below its range the
        // int arithmetic wraps (`MAX - (3 - (MIN + 3)) + 1` is 0 in Java), and so does ours.
        assert_eq!(last.decrement(3), Sequence(0));
        // Java: `Integer.MAX_VALUE - (1 - Integer.MIN_VALUE) + 1` wraps to -1.
        assert_eq!(Sequence(i32::MIN).decrement(1), Sequence(-1));
        assert_eq!(Sequence(-5).increment(3), Sequence(-2));
    }

    /// The hand-written `Ord`/`Eq`/`Hash` of `TopicPartition` agree with the derives they
    /// replaced (name bytewise, then index). Keys built on other threads are the sweep's
    /// concern: `mirror_sim::cli::jobs` tests them.
    #[derive(PartialEq, Eq, PartialOrd, Ord, Hash)]
    struct Derived<'a>(&'a str, i32);

    fn hash_of<T: Hash>(v: &T) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        v.hash(&mut h);
        h.finish()
    }

    proptest::proptest! {
        #[test]
        fn topic_partition_orders_as_the_derive(
            a in "[a-c_.é-]{0,4}", b in "[a-c_.é-]{0,4}", pa in -2i32..3, pb in -2i32..3,
        ) {
            let x = TopicPartition::new(a.as_str(), pa);
            let y = TopicPartition::new(b.as_str(), pb);
            let (dx, dy) = (Derived(&a, pa), Derived(&b, pb));
            proptest::prop_assert_eq!(x.cmp(&y), dx.cmp(&dy));
            proptest::prop_assert_eq!(x == y, dx == dy);
            proptest::prop_assert_eq!(x.cmp(&x.clone()), Ordering::Equal);
            if x == y {
                proptest::prop_assert_eq!(hash_of(&x), hash_of(&y));
            }
        }
    }

    #[test]
    fn interned_names_share_one_allocation() {
        let (a, b) = (
            TopicPartition::new("orders", 0),
            TopicPartition::new(String::from("orders"), 1),
        );
        assert!(Arc::ptr_eq(&a.topic, &b.topic));
    }

    #[test]
    fn display_uses_kafka_forms() {
        assert_eq!(TopicPartition::new("orders", 3).to_string(), "orders-3");
        assert!(!ProducerId::NONE.is_some());
        assert!(ProducerId(0).is_some());
    }
}
