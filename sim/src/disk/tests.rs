//! Flush/crash conformance suite for [`SimDisk`].

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::*;

const LOG: &str = "orders-0/00000000000000000000.log";

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

fn read(d: &SimDisk, path: &str) -> Vec<u8> {
    d.read(path).expect("file exists").to_vec()
}

#[test]
fn flushed_data_survives_a_crash() {
    // Goal: fsync'd bytes survive every crash policy.
    for policy in [
        CrashPolicy::LoseAllUnflushed,
        CrashPolicy::KeepRandomPrefix,
        CrashPolicy::KeepAll,
    ] {
        let mut d = SimDisk::new();
        d.append(LOG, b"batch-1|").unwrap();
        d.flush(LOG).unwrap();
        let report = d.crash(policy, &mut rng(1));
        assert!(report.files.is_empty(), "clean files are not reported");
        assert_eq!(read(&d, LOG), b"batch-1|");
    }
}

#[test]
fn unflushed_data_is_lost_under_lose_all() {
    // Goal: power loss keeps only the durable image and reports what went.
    let mut d = SimDisk::new();
    d.append(LOG, b"durable|").unwrap();
    d.flush(LOG).unwrap();
    d.append(LOG, b"volatile").unwrap();
    assert_eq!(
        read(&d, LOG),
        b"durable|volatile",
        "reads see the page cache"
    );
    let report = d.crash(CrashPolicy::LoseAllUnflushed, &mut rng(1));
    assert_eq!(read(&d, LOG), b"durable|");
    let f = &report.files[LOG];
    assert_eq!((f.len_before, f.durable_len, f.len_after), (16, 8, 8));
    assert_eq!((f.bytes_lost, f.ops_lost, f.torn), (8, 1, false));
    assert!(!d.is_dirty(LOG));
    assert_eq!(d.stats().bytes_lost, 8);
}

#[test]
fn keep_all_models_a_process_crash() {
    // Goal: with the page cache intact nothing is lost.
    let mut d = SimDisk::new();
    d.append(LOG, b"abc").unwrap();
    let report = d.crash(CrashPolicy::KeepAll, &mut rng(1));
    assert_eq!(read(&d, LOG), b"abc");
    assert_eq!(report.bytes_lost(), 0);
    assert_eq!(d.durable_len(LOG), Some(3));
}

#[test]
fn torn_tails_are_prefixes_of_what_was_written() {
    // Goal: under KeepRandomPrefix the file is always durable ++ a prefix of the unflushed
    // appends, and over many seeds some crashes tear an append mid-way.
    let written: Vec<u8> = (0u8..60).collect();
    let mut torn = 0;
    let mut lengths = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let mut d = SimDisk::new();
        d.append(LOG, b"HEAD").unwrap();
        d.flush(LOG).unwrap();
        for chunk in written.chunks(20) {
            d.append(LOG, chunk).unwrap();
        }
        let report = d.crash(CrashPolicy::KeepRandomPrefix, &mut rng(seed));
        let after = read(&d, LOG);
        assert_eq!(&after[..4], b"HEAD");
        assert_eq!(&after[4..], &written[..after.len() - 4]);
        let f = &report.files[LOG];
        assert_eq!(f.bytes_lost, 60 - (after.len() as u64 - 4));
        assert_eq!(f.torn, !(after.len() - 4).is_multiple_of(20));
        torn += u32::from(f.torn);
        lengths.insert(after.len());
    }
    assert!(torn > 50, "torn writes should be common, got {torn}");
    assert!(
        lengths.contains(&4) && lengths.contains(&64),
        "both extremes reachable"
    );
}

#[test]
fn unflushed_truncate_can_be_undone_by_a_crash() {
    // Goal: truncation is an operation like any other; power loss before the flush brings
    // the truncated durable bytes back (Kafka flushes after truncating for this reason).
    let mut d = SimDisk::new();
    d.append(LOG, b"0123456789").unwrap();
    d.flush(LOG).unwrap();
    d.truncate(LOG, 4).unwrap();
    d.append(LOG, b"ab").unwrap();
    assert_eq!(read(&d, LOG), b"0123ab");
    assert_eq!(d.durable_len(LOG), Some(10));
    d.crash(CrashPolicy::LoseAllUnflushed, &mut rng(1));
    assert_eq!(read(&d, LOG), b"0123456789");

    d.truncate(LOG, 4).unwrap();
    d.flush(LOG).unwrap();
    d.append(LOG, b"xy").unwrap();
    d.crash(CrashPolicy::LoseAllUnflushed, &mut rng(1));
    assert_eq!(read(&d, LOG), b"0123");
}

#[test]
fn random_prefix_replays_truncate_then_append_in_order() {
    // Goal: every outcome of truncate+append+crash is one of the ordered prefixes.
    let allowed: [&[u8]; 5] = [b"0123456789", b"0123", b"0123a", b"0123ab", b"0123abc"];
    for seed in 0..100 {
        let mut d = SimDisk::new();
        d.append(LOG, b"0123456789").unwrap();
        d.flush(LOG).unwrap();
        d.truncate(LOG, 4).unwrap();
        d.append(LOG, b"abc").unwrap();
        d.crash(CrashPolicy::KeepRandomPrefix, &mut rng(seed));
        let after = read(&d, LOG);
        assert!(
            allowed.contains(&after.as_slice()),
            "seed {seed}: {after:?}"
        );
    }
}

#[test]
fn checkpoint_overwrite_is_atomic_and_durable() {
    // Goal: write_atomic gives old-or-new, never a mix, and is durable on Ok.
    let cp = "replication-offset-checkpoint";
    let mut d = SimDisk::new();
    d.write_atomic(cp, b"0\n1\norders 0 100\n").unwrap();
    d.write_atomic(cp, b"0\n1\norders 0 7\n").unwrap();
    assert!(!d.is_dirty(cp));
    for seed in 0..20 {
        let mut c = d.clone();
        c.crash(CrashPolicy::KeepRandomPrefix, &mut rng(seed));
        assert_eq!(read(&c, cp), b"0\n1\norders 0 7\n");
    }
    // A failed atomic write leaves the old content.
    d.fail_next_io("replication");
    assert_eq!(
        d.write_atomic(cp, b"garbage"),
        Err(DiskError::Io { path: cp.into() })
    );
    assert_eq!(read(&d, cp), b"0\n1\norders 0 7\n");
}

#[test]
fn full_disk_and_capacity_fail_appends_with_no_space() {
    // Goal: ENOSPC from the knob and from capacity, nothing applied, shrinking still works.
    let mut d = SimDisk::with_capacity(10);
    d.append(LOG, b"12345678").unwrap();
    let err = d.append(LOG, b"abc").unwrap_err();
    assert_eq!(
        err,
        DiskError::NoSpace {
            path: LOG.into(),
            needed: 3,
            free: 2
        }
    );
    assert_eq!(d.len(LOG), Some(8));
    d.set_full(true);
    assert!(matches!(
        d.append(LOG, b"a"),
        Err(DiskError::NoSpace { free: 0, .. })
    ));
    d.truncate(LOG, 2).unwrap();
    d.flush(LOG).unwrap();
    d.set_full(false);
    d.append(LOG, b"abc").unwrap();
    assert_eq!(d.used_bytes(), 5);
    assert_eq!(d.stats().failed_ops, 2);
}

#[test]
fn eio_hits_the_next_matching_op_once() {
    // Goal: fail_next_io is one-shot, prefix-matched, and a failed flush keeps data dirty.
    let mut d = SimDisk::new();
    d.append(LOG, b"abc").unwrap();
    d.fail_next_io("orders-0/");
    d.append("orders-1/log", b"x").unwrap();
    assert_eq!(d.flush(LOG), Err(DiskError::Io { path: LOG.into() }));
    assert!(d.is_dirty(LOG));
    d.flush(LOG).unwrap();
    assert!(!d.is_dirty(LOG));
    assert_eq!(
        d.flush("missing"),
        Err(DiskError::NotFound {
            path: "missing".into()
        })
    );
}

#[test]
fn listing_reads_and_delete() {
    // Goal: deterministic sorted listings, ranged reads, durable delete.
    let mut d = SimDisk::new();
    for p in [
        "orders-1/log",
        "orders-0/log",
        "orders-0/leader-epoch-checkpoint",
        "x",
    ] {
        d.append(p, b"0123456789").unwrap();
    }
    assert_eq!(
        d.list_under("orders-0/"),
        ["orders-0/leader-epoch-checkpoint", "orders-0/log"]
    );
    assert_eq!(d.list().len(), 4);
    assert_eq!(d.read_at("x", 8, 5).unwrap().as_ref(), b"89");
    assert_eq!(d.read_at("x", 20, 5).unwrap().as_ref(), b"");
    d.delete("x").unwrap();
    d.crash(CrashPolicy::KeepAll, &mut rng(0));
    assert!(!d.exists("x"));
    assert_eq!(d.read("x"), None);
}

#[test]
fn same_seed_same_crash_outcome() {
    // Goal: crash outcomes depend only on the RNG seed.
    let run = |seed| {
        let mut d = SimDisk::new();
        for i in 0..5u8 {
            let path = format!("t-{i}/log");
            d.append(&path, &[i; 7]).unwrap();
            d.append(&path, &[i; 9]).unwrap();
        }
        let report = d.crash(CrashPolicy::KeepRandomPrefix, &mut rng(seed));
        (
            report,
            d.list().iter().map(|p| read(&d, p)).collect::<Vec<_>>(),
        )
    };
    assert_eq!(run(42), run(42));
    assert_ne!(
        (1..20).map(run).collect::<Vec<_>>(),
        (21..40).map(run).collect::<Vec<_>>()
    );
}

#[test]
fn rot_flips_flushed_bytes_only_and_survives_every_crash() {
    // Goal: bit rot reaches the flushed prefix only, is seen by reads at once, and stays on
    // the platter whatever a crash keeps of the unflushed tail.
    for policy in [
        CrashPolicy::LoseAllUnflushed,
        CrashPolicy::KeepRandomPrefix,
        CrashPolicy::KeepAll,
    ] {
        let mut d = SimDisk::new();
        d.append(LOG, b"abcd").unwrap();
        d.flush(LOG).unwrap();
        d.append(LOG, b"efgh").unwrap();
        assert_eq!(d.flushed_len(LOG), Some(4));
        assert!(!d.rot(LOG, 5, 0x01), "unflushed bytes do not rot");
        assert!(!d.rot(LOG, 1, 0), "a zero mask changes nothing");
        assert!(!d.rot("missing", 0, 0x01));
        assert!(d.rot(LOG, 1, 0x01));
        assert_eq!(&read(&d, LOG)[..4], b"accd", "reads see the rot");
        d.crash(policy, &mut rng(3));
        assert_eq!(&read(&d, LOG)[..4], b"accd", "{policy:?}");
        assert_eq!(d.stats().rotted_bytes, 1);
    }
}
