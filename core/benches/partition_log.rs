//! What the partition model costs per record, so later milestones can budget the simulator.
//! Run: `cargo bench -p mirror-core --bench partition_log` (release profile).
//! Prints ns per record for leader appends (idempotent), follower appends, reads
//! (read_uncommitted and read_committed), truncation with producer-state replay, and the
//! cost of building and decoding batches. The benchmark measures wall time, so it is the one
//! place in `core/` allowed a clock.
#![allow(clippy::disallowed_types)]

use std::hint::black_box;
use std::time::Instant;

use mirror_core::log::partition_log::{LogConfig, PartitionLog};
use mirror_core::log::producer_state::AppendOrigin;
use mirror_core::record::{BatchBuilder, ControlRecord, RecordBatch, SimpleRecord};
use mirror_core::replication::fetch_leader::FetchIsolation;
use mirror_core::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence};

const BATCHES: usize = 20_000;
const RECORDS_PER_BATCH: usize = 10;

fn report(name: &str, records: usize, start: Instant) {
    let ns = start.elapsed().as_nanos() as f64;
    println!(
        "{name:<44} {:>9.1} ns/record {:>12.0} records/s",
        ns / records as f64,
        records as f64 / (ns / 1e9)
    );
}

fn batches() -> Vec<RecordBatch> {
    let recs: Vec<SimpleRecord> = (0..RECORDS_PER_BATCH)
        .map(|i| SimpleRecord::value(i as i64, vec![b'x'; 100]))
        .collect();
    (0..BATCHES)
        .map(|i| {
            let pid = ProducerId((i % 8) as i64);
            let seq = Sequence(((i / 8) * RECORDS_PER_BATCH) as i32);
            if i % 4 == 3 {
                BatchBuilder::transactional(pid, ProducerEpoch(0), seq).build(&recs)
            } else {
                BatchBuilder::idempotent(pid, ProducerEpoch(0), seq).build(&recs)
            }
        })
        .collect()
}

fn main() {
    let total = BATCHES * RECORDS_PER_BATCH;
    let t = Instant::now();
    let input = batches();
    report("build batches (encode + CRC)", total, t);

    let t = Instant::now();
    for b in &input {
        black_box(RecordBatch::decode(b.bytes().clone()).expect("valid"));
    }
    report("decode batches (CRC + record framing)", total, t);

    let mut leader = PartitionLog::new(LogConfig::default());
    let t = Instant::now();
    for (i, b) in input.iter().enumerate() {
        leader
            .append_as_leader(b, LeaderEpoch(1), AppendOrigin::Client)
            .expect("append");
        if i % 4 == 3 {
            let pid = b.producer_id();
            let marker = BatchBuilder::transactional(pid, ProducerEpoch(0), Sequence::NONE)
                .build_control(ControlRecord::commit(0), 0);
            leader
                .append_as_leader(&marker, LeaderEpoch(1), AppendOrigin::Coordinator)
                .expect("marker");
        }
    }
    report("leader append (idempotent + txn markers)", total, t);
    leader
        .maybe_increment_high_watermark(leader.log_end_offset())
        .expect("hw");

    let mut follower = PartitionLog::new(LogConfig::default());
    let t = Instant::now();
    for b in leader.batches() {
        follower
            .append_as_follower(b, None)
            .expect("follower append");
    }
    report("follower append (bytes kept)", total, t);

    for (name, iso) in [
        (
            "read read_uncommitted (1 MiB fetches)",
            FetchIsolation::HighWatermark,
        ),
        (
            "read read_committed (1 MiB fetches)",
            FetchIsolation::TxnCommitted,
        ),
    ] {
        let t = Instant::now();
        let mut at = Offset(0);
        while at < leader.high_watermark() {
            let r = leader.read(at, 1 << 20, iso).expect("read");
            at = r.batches.last().expect("non-empty").next_offset();
            black_box(r);
        }
        report(name, total, t);
    }

    let t = Instant::now();
    let mut l = follower.clone();
    let rounds = 20;
    for i in 0..rounds {
        let target = l.log_end_offset().plus(-(RECORDS_PER_BATCH as i64) * 2);
        l.truncate_to(target).expect("truncate");
        black_box(i);
    }
    let per = t.elapsed() / rounds;
    println!(
        "{:<44} {:>9.3} ms per truncation of a {}-record log (full producer-state replay)",
        "truncate_to + producer state reload",
        per.as_secs_f64() * 1e3,
        total
    );
}
