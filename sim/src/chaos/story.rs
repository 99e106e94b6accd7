//! The failover story of a mirror plan: what operators and applications do around a
//! failover, drawn so that every KIP-1279 stop/failback rule has a workload that depends on
//! it. Without it, clients only ever write to cluster 0 and an ablated rule has nothing to
//! break (product §4: "stop while a transaction is open, failback while the old source still
//! has writes").
//!
//! Ingredients, each drawn independently (all deterministic from the plan's bytes):
//! - probe writes to the mirror destination at random moments (`read_only_until_stopped`);
//! - a StopMirror (failover) in the first half of the safety phase, with a transactional
//!   producer on the source so transactions are open at stop time (`no_hanging_txn_after_stop`);
//! - applications moving to the new primary: idempotent and transactional producers on
//!   cluster 1 once STOPPED (`epoch_above_lme_after_stop`, `pid_reset_after_stop`);
//! - a crash of a source partition leader after the stop: the old source writes its
//!   unmirrored tail in epochs above the LME (what the failback truncation is for);
//! - the source's applications leaving it a little later (its producers close), so the
//!   tail stays short and the new primary's writes outgrow it;
//! - a failback after all that (`failback_converges`, `mirror_prefix`).

use arbitrary::{Result as ArbResult, Unstructured};

use super::plan::{ChaosFault, ChaosPlan, ClientPlan, CrashMode, FaultStep};

/// Appends the story's steps and clients to `plan` (a mirror plan with its base draw done).
pub(super) fn draw_failover_story(u: &mut Unstructured<'_>, plan: &mut ChaosPlan) -> ArbResult<()> {
    let safety = plan.safety_ms;
    for _ in 0..u.int_in_range(0..=2usize)? {
        let (topic, partition) = pick_partition(u, plan)?;
        plan.faults.push(FaultStep {
            at_ms: u.int_in_range(0..=safety)?,
            fault: ChaosFault::ProbeWrite { topic, partition },
        });
    }
    if u.ratio(2, 3)? {
        draw_failover(u, plan)?;
    }
    plan.faults.sort_by_key(|f| f.at_ms);
    Ok(())
}

fn draw_failover(u: &mut Unstructured<'_>, plan: &mut ChaosPlan) -> ArbResult<()> {
    let safety = plan.safety_ms;
    let stop_at = u.int_in_range(2_000..=safety / 2)?;
    plan.faults.push(FaultStep {
        at_ms: stop_at,
        fault: ChaosFault::StopMirror,
    });
    let has_txn = plan
        .clients
        .iter()
        .any(|c| matches!(c, ClientPlan::TransactionalProducer { .. }));
    if !has_txn && u.ratio(2, 3)? {
        // Long transactions at a high rate: one is almost always open when the stop cuts.
        plan.clients.push(ClientPlan::TransactionalProducer {
            topic: u.choose_index(plan.topics.len())?,
            abort_one_in: u.int_in_range(0..=4)?,
            rate: u.int_in_range(50..=150)?,
            max_in_flight: u.int_in_range(1..=5)?,
        });
    }
    // The old source's tail: a leader change after the stop puts it in epochs above the
    // LME (numbers the new source also uses, for other data, after its stop bump), and the
    // applications may leave the old source a little later.
    let mut last = stop_at;
    let mut crashed_topic = None;
    if u.ratio(2, 3)? {
        let (topic, partition) = pick_partition(u, plan)?;
        crashed_topic = Some(topic);
        last = stop_at + u.int_in_range(1_000..=4_000)?;
        plan.faults.push(FaultStep {
            at_ms: last,
            fault: ChaosFault::CrashLeader {
                cluster: 0,
                topic,
                partition,
                mode: CrashMode::Process,
                down_ms: u.int_in_range(500..=5_000)?,
            },
        });
    }
    // The first failover application writes the topic whose source leader crashed: the
    // new primary's data then outgrows the old source's tail on that partition.
    for i in 0..u.int_in_range(1..=2usize)? {
        let topic = match crashed_topic {
            Some(t) if i == 0 => t,
            _ => u.choose_index(plan.topics.len())?,
        };
        plan.failover_clients.push(if u.ratio(1, 2)? {
            ClientPlan::Producer {
                topic,
                acks: -1,
                rate: u.int_in_range(20..=150)?,
                max_in_flight: u.int_in_range(1..=5)?,
            }
        } else {
            ClientPlan::TransactionalProducer {
                topic,
                abort_one_in: u.int_in_range(0..=4)?,
                rate: u.int_in_range(20..=100)?,
                max_in_flight: u.int_in_range(1..=5)?,
            }
        });
    }
    if u.ratio(1, 2)? {
        last += u.int_in_range(1_000..=4_000)?;
        plan.faults.push(FaultStep {
            at_ms: last,
            fault: ChaosFault::MoveSourceProducers,
        });
    }
    if u.ratio(1, 4)? {
        // A zombie mirror leader racing the stop: cut from its controller around the stop, it
        // keeps driving the partition in its old epoch while the new leader does too, both
        // writing the partition's `__mirror_state` record.
        let (topic, partition) = pick_partition(u, plan)?;
        plan.faults.push(FaultStep {
            at_ms: u.int_in_range(stop_at.saturating_sub(500)..=stop_at + 500)?,
            fault: ChaosFault::IsolateLeaderFromController {
                cluster: 1,
                topic,
                partition,
                for_ms: u.int_in_range(5_000..=15_000)?,
            },
        });
    }
    if u.ratio(2, 3)? {
        let earliest = (stop_at + 5_000).max(last + 2_000);
        let latest = safety.saturating_sub(1_000).max(earliest);
        plan.faults.push(FaultStep {
            at_ms: u.int_in_range(earliest..=latest)?,
            fault: ChaosFault::Failback,
        });
    }
    Ok(())
}

fn pick_partition(u: &mut Unstructured<'_>, plan: &ChaosPlan) -> ArbResult<(usize, i32)> {
    let topic = u.choose_index(plan.topics.len())?;
    let partition = u.int_in_range(0..=plan.topics[topic].partitions - 1)?;
    Ok((topic, partition))
}
