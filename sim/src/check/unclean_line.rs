//! Which leaders inherit an unclean election's cut (kafka-semantics §2.3 item 6, KIP-704).
//!
//! An unclean election in epoch `u` makes the chosen replica's log the partition's history:
//! the committed records it lacks are a declared loss. The chosen broker may only act on that
//! leadership much later: paused or cut off, it misses epoch `u`, the controller then fences
//! it (epoch `u + 1`, no leader), and after it returns it is elected *cleanly* from the ISR
//! `[it]` the unclean election left (epoch `u + 2`). That clean leader is the unclean one:
//! Kafka's controller forces the ISR to the unclean leader, so every later clean election
//! from that ISR inherits its history (single-cluster chaos seed 3308: elected uncleanly in
//! epoch 1, offline in 2, cleanly in 3, missing what the old leader alone had committed).

use std::collections::BTreeMap;

use mirror_core::types::{BrokerId, LeaderEpoch};

/// True when `broker`, becoming leader in `epoch`, is the heir of an unclean election: some
/// unclean epoch `u <= epoch` chose `broker`, and every election after `u` up to `epoch`
/// chose `broker` or nobody, so no other leader extended the history since the cut.
///
/// `elected` holds the controller's choice per epoch (`None`: offline).
#[must_use]
pub fn inherits_unclean_cut(
    unclean_epochs: &[LeaderEpoch],
    elected: &BTreeMap<LeaderEpoch, Option<BrokerId>>,
    broker: BrokerId,
    epoch: LeaderEpoch,
) -> bool {
    unclean_epochs.iter().any(|&u| {
        u <= epoch
            && elected.get(&u) == Some(&Some(broker))
            && elected
                .range(u..=epoch)
                .all(|(_, l)| l.is_none() || *l == Some(broker))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elections(list: &[(i32, Option<i32>)]) -> BTreeMap<LeaderEpoch, Option<BrokerId>> {
        list.iter()
            .map(|(e, l)| (LeaderEpoch(*e), l.map(BrokerId)))
            .collect()
    }

    #[test]
    fn a_clean_leader_after_an_offline_epoch_inherits_its_own_unclean_election() {
        // Seed 3308: 1 unclean -> broker 2, 2 offline, 3 clean -> broker 2.
        let elected = elections(&[(0, Some(1)), (1, Some(2)), (2, None), (3, Some(2))]);
        let unclean = [LeaderEpoch(1)];
        assert!(inherits_unclean_cut(
            &unclean,
            &elected,
            BrokerId(2),
            LeaderEpoch(3)
        ));
        assert!(inherits_unclean_cut(
            &unclean,
            &elected,
            BrokerId(2),
            LeaderEpoch(1)
        ));
    }

    #[test]
    fn another_leader_in_between_or_another_broker_does_not_inherit() {
        // Broker 1 led epoch 2 (it may have committed more); broker 2's clean epoch 3 must
        // hold that history.
        let elected = elections(&[(1, Some(2)), (2, Some(1)), (3, Some(2))]);
        let unclean = [LeaderEpoch(1)];
        assert!(!inherits_unclean_cut(
            &unclean,
            &elected,
            BrokerId(2),
            LeaderEpoch(3)
        ));
        // A broker the unclean election did not choose inherits nothing.
        let elected = elections(&[(1, Some(2)), (2, None), (3, Some(3))]);
        assert!(!inherits_unclean_cut(
            &unclean,
            &elected,
            BrokerId(3),
            LeaderEpoch(3)
        ));
        // No unclean election at all.
        let elected = elections(&[(1, Some(2)), (2, None), (3, Some(2))]);
        assert!(!inherits_unclean_cut(
            &[],
            &elected,
            BrokerId(2),
            LeaderEpoch(3)
        ));
        // An unclean election after the epoch in question does not excuse it.
        assert!(!inherits_unclean_cut(
            &[LeaderEpoch(4)],
            &elections(&[(3, Some(2)), (4, Some(2))]),
            BrokerId(2),
            LeaderEpoch(3)
        ));
    }
}
