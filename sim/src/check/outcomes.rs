//! Outcome checks that no other family owns (product.md §5): what a user of Kafka and of the
//! mirror would see, judged from client events and the final logs, whatever the design's means.
//!
//! - `no_duplicates`: a record of an idempotent or transactional producer is in a log at most
//!   once. The workload's values are unique (`c{client}-{n}`), so a value twice is a duplicate
//!   write (a retry the broker did not deduplicate), never two records that happen to match.
//! - `lso_reaches_hw`: with the producers stopped, no partition keeps a hanging transaction.
//! - `synced_offset_in_bounds`: a group offset the mirror commits on the destination lies in
//!   the destination partition's `[log start, LEO]` when it takes effect: when the commit is
//!   answered NONE, or, for a commit whose answer left its outcome open (a coordinator write
//!   timeout, a lost answer), when the destination coordinator holds it (checked in
//!   `check::mirror`).
//! - `failover_producer_not_fenced`: a broker never refuses a producer for a sequence or epoch
//!   that a *mirrored* producer id's state holds (the consequence the PID reset exists to
//!   prevent; kip1279.md A.1 STOPPING).

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::BuildHasherDefault;

use bytes::Bytes;
use mirror_core::keyed_map::KeyHasher;
use mirror_core::log::partition_log::PartitionLog;
use mirror_core::protocol::{ClusterIdx, NodeId};
use mirror_core::types::{Offset, ProducerId, TopicPartition};

use super::Violation;
use super::ghost::PartitionKey;
use super::log_invariants::{NodeMap, leader_of, with_partition};

/// A client: its cluster and number.
type ClientKey = (ClusterIdx, u32);

/// The FNV-1a 64 hash of a record value: ordered maps keyed by it compare `u64`s instead
/// of byte strings, and the value itself decides only between equal hashes.
fn value_hash(value: &[u8]) -> u64 {
    let mut h = crate::trace::hash::TraceHash::new();
    h.update(value);
    h.finish()
}

/// A set of record values, as (hash, value) entries. Values are added one per acknowledged
/// record all run long and looked up only at the end of the run, so `insert` appends (an
/// ordered set paid a search down its tree per record, a cache miss at each level in a big
/// world) and [`Self::seal`] sorts and deduplicates once. A lookup in a sealed set is a
/// binary search on the 64-bit hashes that reads value bytes only on a hash match (the same
/// value, or a collision, which the byte comparison then tells apart).
///
/// The bytes are copied into one buffer instead of kept as `Bytes`: a value is a dozen bytes
/// (`c{client}-{n}`), and a `Bytes` per record cost a reference count taken on the producer's
/// buffer at every acknowledgement and dropped, a cache miss each, at the end of the run
/// (3 % of a scale-10 reference run went to dropping these sets).
#[derive(Clone, Debug, Default)]
pub struct ValueSet {
    /// Per value: its hash, and where its bytes start in `bytes` and how many there are.
    entries: Vec<(u64, u32, u32)>,
    /// Every inserted value's bytes, back to back.
    bytes: Vec<u8>,
    /// True when `entries` is sorted by (hash, bytes) and holds no value twice.
    sealed: bool,
}

impl ValueSet {
    /// Adds `value`.
    pub fn insert(&mut self, value: &[u8]) {
        let start = u32::try_from(self.bytes.len()).expect("value_set_under_4_gib");
        let len = u32::try_from(value.len()).expect("value_under_4_gib");
        self.bytes.extend_from_slice(value);
        self.entries.push((value_hash(value), start, len));
        self.sealed = false;
    }

    fn value(&self, &(_, start, len): &(u64, u32, u32)) -> &[u8] {
        &self.bytes[start as usize..start as usize + len as usize]
    }

    /// Sorts and deduplicates the values, so that lookups search instead of scanning. (The
    /// bytes of a dropped repeat stay in the buffer: nothing reads them again.)
    pub fn seal(&mut self) {
        if !self.sealed {
            let mut entries = std::mem::take(&mut self.entries);
            entries.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0).then_with(|| self.value(a).cmp(self.value(b)))
            });
            entries.dedup_by(|a, b| a.0 == b.0 && self.value(a) == self.value(b));
            self.entries = entries;
            self.sealed = true;
        }
    }

    /// The stored copy of `value`, if it is in the set: a binary search on the hashes once
    /// sealed, a scan before.
    #[must_use]
    pub fn get(&self, value: &[u8]) -> Option<&[u8]> {
        let h = value_hash(value);
        let same = |e: &&(u64, u32, u32)| e.0 == h && self.value(e) == value;
        let found = if self.sealed {
            let from = self.entries.partition_point(|e| e.0 < h);
            self.entries[from..]
                .iter()
                .take_while(|e| e.0 == h)
                .find(same)
        } else {
            self.entries.iter().find(same)
        };
        found.map(|e| self.value(e))
    }

    /// Number of distinct values (sealing first).
    #[must_use]
    pub fn len(&mut self) -> usize {
        self.seal();
        self.entries.len()
    }

    /// True when no value was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl FromIterator<Bytes> for ValueSet {
    fn from_iter<I: IntoIterator<Item = Bytes>>(iter: I) -> Self {
        let mut set = Self::default();
        for v in iter {
            set.insert(&v);
        }
        set.seal();
        set
    }
}

/// What the outcome checks remember of the clients.
#[derive(Clone, Debug, Default)]
pub struct ClientRecords {
    /// Values written by idempotent or transactional producers (acknowledged or given up
    /// on), per partition.
    pub idempotent_values: BTreeMap<PartitionKey, ValueSet>,
    /// Values given up on, by client, until the client is known to be idempotent.
    failed: BTreeMap<ClientKey, Vec<(TopicPartition, Vec<Bytes>)>>,
    /// Clients seen writing with a producer id.
    idempotent_clients: BTreeSet<ClientKey>,
}

impl ClientRecords {
    /// A producer's acknowledged write.
    pub fn on_acked(
        &mut self,
        cluster: ClusterIdx,
        client: u32,
        tp: &TopicPartition,
        producer_id: ProducerId,
        values: &[Bytes],
    ) {
        if producer_id.0 < 0 {
            return;
        }
        if self.idempotent_clients.insert((cluster, client))
            && let Some(pending) = self.failed.remove(&(cluster, client))
        {
            for (tp, v) in pending {
                self.add(cluster, &tp, &v);
            }
        }
        self.add(cluster, tp, values);
    }

    /// A write the producer gave up on (it may still be in the log).
    pub fn on_failed(
        &mut self,
        cluster: ClusterIdx,
        client: u32,
        tp: &TopicPartition,
        values: &[Bytes],
    ) {
        if self.idempotent_clients.contains(&(cluster, client)) {
            self.add(cluster, tp, values);
        } else {
            self.failed
                .entry((cluster, client))
                .or_default()
                .push((tp.clone(), values.to_vec()));
        }
    }

    /// The client wrote with producer id `pid` (a refusal names it).
    pub fn on_producer_id(&mut self, cluster: ClusterIdx, client: u32, pid: ProducerId) {
        if pid.0 >= 0 {
            self.on_acked(cluster, client, &TopicPartition::new("", 0), pid, &[]);
        }
    }

    /// A scenario's idempotent or transactional write (sent straight to a broker, not by a
    /// producer client), whatever its answer: `no_duplicates` then watches its values too.
    pub fn on_scenario_write(
        &mut self,
        cluster: ClusterIdx,
        tp: &TopicPartition,
        values: &[Bytes],
    ) {
        self.add(cluster, tp, values);
    }

    fn add(&mut self, cluster: ClusterIdx, tp: &TopicPartition, values: &[Bytes]) {
        if values.is_empty() {
            return;
        }
        let set = self
            .idempotent_values
            .entry((cluster, tp.clone()))
            .or_default();
        for v in values {
            set.insert(v);
        }
    }
}

/// The first value of `watched` that `log` holds twice, with the offsets of both copies,
/// reading offsets below `below` only. "First" is in log order: the value whose second copy
/// comes earliest, with its first copy.
///
/// One pass in log order remembers each value's first offset, and `watched` is asked only
/// about a value met again. Offsets rise along the walk, so the first repeat of a watched
/// value is the answer. (Sorting the values by hash to bring copies together cost half of
/// this check, and a scan that looked each value up in `watched` one ordered-set search per
/// record.)
#[must_use]
pub fn duplicate_in(
    log: &PartitionLog,
    watched: &ValueSet,
    below: Offset,
) -> Option<(Bytes, Offset, Offset)> {
    let mut first: FirstCopies<'_> = FirstCopies::default();
    for b in log.batches() {
        if b.base_offset() >= below || b.is_control_batch() || b.producer_id().0 < 0 {
            continue;
        }
        for (i, (_, value)) in b.record_values().enumerate() {
            let offset = b.base_offset().plus(i as i64);
            if offset >= below {
                break;
            }
            let Some(value) = value else { continue };
            match first.entry(Seen(value_hash(value), value)) {
                Entry::Vacant(e) => {
                    e.insert(offset);
                }
                Entry::Occupied(e) => {
                    if let Some(stored) = watched.get(value) {
                        return Some((Bytes::copy_from_slice(stored), *e.get(), offset));
                    }
                }
            }
        }
    }
    None
}

/// The first offset of each value seen. Looked up only, never iterated, with a fixed hasher
/// (the one `KeyedMap`'s index uses): no order of this map can reach a result.
type FirstCopies<'a> = std::collections::HashMap<Seen<'a>, Offset, BuildHasherDefault<KeyHasher>>;

/// A record value with its [`value_hash`]: hashed as that one word (`KeyHasher` spreads
/// words, not byte strings that share a prefix), equal by the bytes.
#[derive(PartialEq, Eq)]
struct Seen<'a>(u64, &'a [u8]);

impl std::hash::Hash for Seen<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.0);
    }
}

/// End of run: no replica holds a watched value twice (a leader anywhere in its log, a
/// follower below its HW: above it a follower may hold a suffix it has yet to reconcile).
pub fn check_no_duplicates(
    records: &mut ClientRecords,
    nodes: &NodeMap,
    name: &dyn Fn(NodeId) -> String,
) -> Result<(), Violation> {
    for set in records.idempotent_values.values_mut() {
        set.seal();
    }
    for n in nodes.keys() {
        for ((_, tp), watched) in records
            .idempotent_values
            .iter()
            .filter(|((c, _), _)| *c == n.cluster)
        {
            let dup = with_partition(nodes, *n, tp, |p| {
                let below = if p.is_leader() {
                    p.log.log_end_offset()
                } else {
                    p.log.high_watermark()
                };
                duplicate_in(&p.log, watched, below)
            })
            .flatten();
            if let Some((v, first, second)) = dup {
                return Err(Violation::new(
                    "no_duplicates",
                    name(*n),
                    Some(tp),
                    Some(second),
                    format!("{v:?} is in the log at {first} and again at {second}"),
                ));
            }
        }
    }
    Ok(())
}

/// A partition's LSO below its HW: the offset of the first open transaction.
#[must_use]
pub fn hanging_transaction(log: &PartitionLog) -> Option<Offset> {
    let lso = log.last_stable_offset();
    (lso < log.high_watermark()).then_some(lso)
}

/// `lso_reaches_hw` on the leaders `wanted` selects (given the leader, the partition and its
/// LSO): the first with a hanging transaction.
pub fn check_lso_reaches_hw(
    nodes: &NodeMap,
    wanted: &dyn Fn(NodeId, &TopicPartition, Offset) -> bool,
    name: &dyn Fn(NodeId) -> String,
) -> Result<(), Violation> {
    for (n, arc) in nodes {
        let tps: Vec<TopicPartition> = {
            let g = crate::world::node::lock(arc);
            let Some(b) = g.as_broker() else { continue };
            b.partitions()
                .filter(|(_, p)| p.is_leader())
                .map(|(tp, _)| tp.clone())
                .collect()
        };
        for tp in tps {
            if leader_of(nodes, n.cluster, &tp) != Some(*n) {
                continue;
            }
            let hanging = with_partition(nodes, *n, &tp, |p| {
                hanging_transaction(&p.log).map(|lso| (lso, p.log.high_watermark()))
            })
            .flatten();
            if let Some((lso, hw)) = hanging.filter(|(lso, _)| wanted(*n, &tp, *lso)) {
                return Err(Violation::new(
                    "lso_reaches_hw",
                    name(*n),
                    Some(&tp),
                    Some(lso),
                    format!(
                        "LSO {lso} stays below HW {hw} with the producers stopped: a transaction hangs (read_committed consumers never pass {lso})"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `synced_offset_in_bounds` for one synced offset, given the destination leader's log start
/// and LEO when it was committed.
#[must_use]
pub fn synced_offset_violation(offset: Offset, log_start: Offset, leo: Offset) -> Option<String> {
    if offset < log_start {
        Some(format!(
            "synced offset {offset} is below the log start {log_start}"
        ))
    } else if offset > leo {
        Some(format!(
            "synced offset {offset} is above the LEO {leo}: consumers would skip records the destination has not mirrored yet"
        ))
    } else {
        None
    }
}

/// `failover_producer_not_fenced`: the broker refused `pid` while its producer-state entry is
/// one the log's mirrored part left (last batch below the stop's PID barrier).
#[must_use]
pub fn refused_by_mirrored_state(
    log: &PartitionLog,
    pid: ProducerId,
    barrier: Offset,
) -> Option<String> {
    let entry = log.producer_state().last_entry(pid)?;
    let last = entry.last_data_offset()?;
    (last < barrier).then(|| {
        format!(
            "producer id {pid} was refused against the state a mirrored batch left (last offset {last}, below the PID barrier at {barrier}): a new producer on the new primary collides with a mirrored producer id"
        )
    })
}

/// `failover_producer_not_fenced`, the silent form: the broker acknowledged `values` from
/// `pid` at `base`, where the log holds a batch of the same producer id with other records.
/// The broker took the write for a retry of that batch (Kafka's duplicate check answers with
/// the original batch's offsets and appends nothing): another producer had this id.
#[must_use]
pub fn deduplicated_against_another_write(
    log: &PartitionLog,
    pid: ProducerId,
    base: Offset,
    values: &[Bytes],
) -> Option<String> {
    let b = log.batch_containing(base)?;
    if b.producer_id() != pid || b.base_offset() != base {
        return None;
    }
    let held = b.records().into_iter().next()?.value;
    let sent = values.first()?;
    (held.as_ref() != Some(sent)).then(|| {
        format!(
            "producer id {pid}'s write was acknowledged at offset {base}, where the log holds another write of that producer id: the broker deduplicated a new producer against a mirrored producer id"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirror_core::log::partition_log::LogConfig;
    use mirror_core::log::producer_state::AppendOrigin;
    use mirror_core::record::{BatchBuilder, SimpleRecord};
    use mirror_core::types::{LeaderEpoch, ProducerEpoch, Sequence};

    fn log_of(batches: &[(i64, &[&str])]) -> PartitionLog {
        let mut log = PartitionLog::new(LogConfig::default());
        for (pid, values) in batches {
            let recs: Vec<SimpleRecord> = values
                .iter()
                .map(|v| SimpleRecord::value(0, v.to_string()))
                .collect();
            let builder = if *pid < 0 {
                BatchBuilder::new()
            } else {
                let seq = log
                    .producer_state()
                    .last_entry(ProducerId(*pid))
                    .filter(|e| !e.is_empty())
                    .map_or(0, |e| e.last_seq().0 + 1);
                BatchBuilder::idempotent(ProducerId(*pid), ProducerEpoch(0), Sequence(seq))
            };
            log.append_as_leader(&builder.build(&recs), LeaderEpoch(0), AppendOrigin::Client)
                .expect("append");
        }
        log
    }

    #[test]
    fn a_write_acknowledged_at_another_writes_batch_of_its_producer_id_was_deduplicated() {
        let log = log_of(&[(0, &["c5-0", "c5-1"]), (-1, &["plain"])]);
        let sent =
            |v: &[&str]| -> Vec<Bytes> { v.iter().map(|s| Bytes::from(s.to_string())).collect() };
        // Allowed: a retry of the same batch is answered with its original offsets.
        assert_eq!(
            deduplicated_against_another_write(&log, ProducerId(0), Offset(0), &sent(&["c5-0"])),
            None
        );
        // Allowed: another producer id, or an offset that is not that batch's base.
        assert_eq!(
            deduplicated_against_another_write(&log, ProducerId(1), Offset(0), &sent(&["c9-0"])),
            None
        );
        assert_eq!(
            deduplicated_against_another_write(&log, ProducerId(0), Offset(2), &sent(&["c9-0"])),
            None
        );
        // Forbidden: a new producer with the same id gets the mirrored batch's offset.
        assert!(
            deduplicated_against_another_write(&log, ProducerId(0), Offset(0), &sent(&["c9-0"]))
                .is_some()
        );
    }

    fn watched(v: &[&str]) -> ValueSet {
        v.iter().map(|s| Bytes::from(s.to_string())).collect()
    }

    #[test]
    fn a_value_set_finds_exactly_its_values() {
        // Goal: membership by (hash, bytes) answers like a set of byte strings: equal bytes
        // are found whatever buffer they come from, a prefix or a longer value is not.
        let mut set = watched(&["c1-0", "c1-1", "c10-0", "", "c1-1"]);
        assert_eq!(set.len(), 4, "a value added twice is one value");
        assert_eq!(set.get(b"c1-1"), Some(&b"c1-1"[..]));
        assert_eq!(set.get(b""), Some(&b""[..]));
        assert_eq!(set.get(b"c1-"), None);
        assert_eq!(set.get(b"c1-10"), None);
        assert_eq!(ValueSet::default().get(b"c1-0"), None);
        assert!(ValueSet::default().is_empty());
        // Before sealing, lookups scan and answer the same; after more inserts too.
        let mut open = ValueSet::default();
        for v in ["c1-0", "c1-1", "c1-1"] {
            open.insert(v.as_bytes());
        }
        assert_eq!(open.get(b"c1-1"), Some(&b"c1-1"[..]));
        assert_eq!(open.get(b"c1-2"), None);
        open.seal();
        open.insert(b"c1-2");
        assert_eq!(open.get(b"c1-2"), Some(&b"c1-2"[..]));
        assert_eq!(open.get(b"c1-0"), Some(&b"c1-0"[..]));
        assert_eq!(open.len(), 3);
    }

    #[test]
    fn a_value_twice_is_a_duplicate_and_once_is_not() {
        // Allowed: each value of producer 7 once, and a plain producer's retry duplicate
        // (acks=1 without idempotence may duplicate: Kafka promises nothing there).
        let ok = log_of(&[
            (7, &["c1-0", "c1-1"]),
            (-1, &["c2-0"]),
            (-1, &["c2-0"]),
            (7, &["c1-2"]),
        ]);
        let w = watched(&["c1-0", "c1-1", "c1-2"]);
        assert_eq!(duplicate_in(&ok, &w, ok.log_end_offset()), None);
        // Forbidden: c1-1 written twice by the idempotent producer (under another producer id
        // after an epoch bump or a reset, still the same record).
        let dup = log_of(&[(7, &["c1-0", "c1-1"]), (8, &["c1-1", "c1-2"])]);
        assert_eq!(
            duplicate_in(&dup, &w, dup.log_end_offset()),
            Some((Bytes::from("c1-1"), Offset(1), Offset(2)))
        );
        // Below a follower's HW only.
        assert_eq!(duplicate_in(&dup, &w, Offset(2)), None);
        // The value whose second copy comes first is reported, with its first copy; a
        // repeated value nobody watches is not.
        let w = watched(&["c1-0", "c1-1", "c1-2"]);
        let crossed = log_of(&[(7, &["c1-0", "c1-1"]), (8, &["c1-1", "c1-0"])]);
        assert_eq!(
            duplicate_in(&crossed, &w, crossed.log_end_offset()),
            Some((Bytes::from("c1-1"), Offset(1), Offset(2)))
        );
        let thrice = log_of(&[(7, &["x", "x", "c1-2"]), (8, &["c1-2", "c1-2"])]);
        assert_eq!(
            duplicate_in(&thrice, &w, thrice.log_end_offset()),
            Some((Bytes::from("c1-2"), Offset(2), Offset(3)))
        );
    }

    #[test]
    fn a_copy_far_down_a_long_log_is_found_with_its_first_offset() {
        // Goal: the first-copy table keeps every value's first offset however many values
        // come before the repeat (it grows many times over 5,000 values).
        let names: Vec<String> = (0..5_000).map(|i| format!("c1-{i}")).collect();
        let mut batches: Vec<(i64, Vec<&str>)> = names
            .chunks(10)
            .map(|c| (7, c.iter().map(String::as_str).collect()))
            .collect();
        batches.push((8, vec!["c1-3", "c1-4321"]));
        let slices: Vec<(i64, &[&str])> = batches.iter().map(|(p, v)| (*p, v.as_slice())).collect();
        let log = log_of(&slices);
        let w = watched(&["c1-4321"]);
        assert_eq!(
            duplicate_in(&log, &w, log.log_end_offset()),
            Some((Bytes::from("c1-4321"), Offset(4321), Offset(5001)))
        );
    }

    #[test]
    fn a_synced_offset_must_lie_in_the_destination_log() {
        assert_eq!(
            synced_offset_violation(Offset(5), Offset(0), Offset(10)),
            None
        );
        assert_eq!(
            synced_offset_violation(Offset(10), Offset(0), Offset(10)),
            None
        );
        assert!(synced_offset_violation(Offset(11), Offset(0), Offset(10)).is_some());
        assert!(synced_offset_violation(Offset(2), Offset(3), Offset(10)).is_some());
    }

    #[test]
    fn a_refusal_against_a_mirrored_entry_is_flagged_and_against_a_local_one_is_not() {
        // Producer 0's entry comes from mirrored batches 0..=1 (below the barrier at 2).
        let log = log_of(&[(0, &["src-0"]), (0, &["src-1"])]);
        assert!(refused_by_mirrored_state(&log, ProducerId(0), Offset(2)).is_some());
        // The same entry above the barrier is the new producer's own history: Kafka's rules.
        assert_eq!(
            refused_by_mirrored_state(&log, ProducerId(0), Offset(1)),
            None
        );
        // No entry at all (the reset expired it): nothing to blame on the mirror.
        assert_eq!(
            refused_by_mirrored_state(&log, ProducerId(9), Offset(2)),
            None
        );
    }

    #[test]
    fn a_hanging_transaction_keeps_the_lso_below_the_hw() {
        let mut log = PartitionLog::new(LogConfig::default());
        let txn = BatchBuilder::transactional(ProducerId(3), ProducerEpoch(0), Sequence(0))
            .build(&[SimpleRecord::value(0, "t")]);
        log.append_as_leader(&txn, LeaderEpoch(0), AppendOrigin::Client)
            .expect("append");
        log.maybe_increment_high_watermark(Offset(1)).expect("hw");
        assert_eq!(hanging_transaction(&log), Some(Offset(0)));
        let plain = log_of(&[(-1, &["x"])]);
        let mut plain = plain;
        plain.maybe_increment_high_watermark(Offset(1)).expect("hw");
        assert_eq!(hanging_transaction(&plain), None);
    }
}
