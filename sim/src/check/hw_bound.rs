//! kafka-semantics §2.3 item 2, the leader's half: `HW ≤ min LEO over maximalIsr`, judged on
//! what the leader knows of its followers (the LEO each reported in its last fetch).

use mirror_core::replication::{IsrState, ReplicaState};
use mirror_core::small_map::SmallMap;
use mirror_core::types::{BrokerId, Offset};

/// The leader's side of one partition, as the bound reads it.
pub struct LeaderSide<'a> {
    /// The leader's HW.
    pub high_watermark: Offset,
    /// The leader's log start.
    pub log_start: Offset,
    /// Where the leader's current epoch began (`leaderEpochStartOffset`).
    pub leader_epoch_start: Offset,
    /// The leader's ISR; the bound reads its maximal ISR (committed plus an expand in
    /// flight) by membership, without building the set on every HW move.
    pub isr: &'a IsrState,
    /// The leader's bookkeeping of each follower.
    pub followers: &'a SmallMap<BrokerId, ReplicaState>,
}

/// The first member of the maximal ISR whose reported LEO is below the leader's HW, with
/// that LEO; `None` when the bound holds.
///
/// Not counted against the bound (each is a state Kafka itself reaches):
/// - a follower that has not fetched in this leader epoch (LEO unknown);
/// - an HW at or below the leader epoch start: a new leader inherits its HW and may not yet
///   have heard from followers that lag it (kafka-semantics §1.5, the "lagging HW");
/// - a follower below the leader's log start (a KIP-1279 mirror leader restarted at the
///   source log start has HW = log start; the follower restarts there too);
/// - a follower whose last fetch carried a broker epoch newer than the one in the leader's
///   metadata (`known_broker_epoch`): a new incarnation of that broker, restarted with less
///   than it had (unflushed data lost, a torn tail). The controller removes a restarted
///   broker from every ISR when it fences the old incarnation, before it accepts the new
///   registration (Kafka `ClusterControlManager.registerBroker` waits for the old session to
///   expire), but a leader whose metadata lags (cut off from the controller, or behind on
///   the metadata log) still lists it, and Kafka's `Replica.updateFetchStateOrThrow` rejects
///   only *stale* broker epochs, so it records the new, shorter LEO. The HW the leader
///   showed was reached by the old incarnation: this is the disk-loss window the TLA+ specs
///   exclude from the bound (kafka-semantics §2.1, `canRecoverFromSingleNodeCommittedDataLoss`
///   drops it), not a HW advanced past what the ISR holds (single-cluster chaos seeds 7505,
///   8912; mirror chaos seed 2064). Once the leader's metadata holds the new epoch it also
///   holds the ISR change, and the follower is judged again.
#[must_use]
pub fn leader_hw_above_isr_follower(
    leader: &LeaderSide<'_>,
    known_broker_epoch: impl Fn(BrokerId) -> Option<i64>,
) -> Option<(BrokerId, Offset)> {
    let hw = leader.high_watermark;
    if hw <= leader.leader_epoch_start {
        return None;
    }
    leader
        .followers
        .iter()
        .filter(|(b, _)| leader.isr.in_maximal_isr(**b))
        .filter(|(_, st)| st.log_end_offset.0 >= 0 && st.log_end_offset >= leader.log_start)
        .filter(|(b, st)| !is_unknown_incarnation(st, known_broker_epoch(**b)))
        .find(|(_, st)| hw > st.log_end_offset)
        .map(|(b, st)| (*b, st.log_end_offset))
}

/// The follower's last fetch came from an incarnation newer than the leader's metadata knows.
fn is_unknown_incarnation(st: &ReplicaState, known: Option<i64>) -> bool {
    match (st.broker_epoch, known) {
        (Some(fetched), Some(known)) => fetched != -1 && fetched > known,
        (Some(fetched), None) => fetched != -1,
        (None, _) => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::LazyLock;

    use super::*;

    /// The committed ISR {1, 2} every case reads.
    static ISR: LazyLock<IsrState> =
        LazyLock::new(|| IsrState::committed([BrokerId(1), BrokerId(2)]));

    fn follower(id: i32, leo: i64, broker_epoch: i64) -> ReplicaState {
        let mut r = ReplicaState::new(BrokerId(id));
        r.log_end_offset = Offset(leo);
        r.log_start_offset = Offset(0);
        r.broker_epoch = Some(broker_epoch);
        r
    }

    fn side(followers: &SmallMap<BrokerId, ReplicaState>, hw: i64) -> LeaderSide<'_> {
        LeaderSide {
            high_watermark: Offset(hw),
            log_start: Offset(0),
            leader_epoch_start: Offset(0),
            isr: &ISR,
            followers,
        }
    }

    #[test]
    fn a_follower_below_the_hw_breaks_the_bound() {
        // Follower 2 reported 1 in the incarnation the leader knows (epoch 7): the leader
        // advanced (or kept) a HW past what an ISR member holds.
        let f: SmallMap<_, _> = [(BrokerId(2), follower(2, 1, 7))].into_iter().collect();
        assert_eq!(
            leader_hw_above_isr_follower(&side(&f, 5), |_| Some(7)),
            Some((BrokerId(2), Offset(1)))
        );
        // Metadata already newer than the fetch (a stale fetch the leader should have refused,
        // or the leader learned the new registration): still judged.
        assert_eq!(
            leader_hw_above_isr_follower(&side(&f, 5), |_| Some(9)),
            Some((BrokerId(2), Offset(1)))
        );
        // At the HW: the bound holds.
        let f: SmallMap<_, _> = [(BrokerId(2), follower(2, 5, 7))].into_iter().collect();
        assert_eq!(
            leader_hw_above_isr_follower(&side(&f, 5), |_| Some(7)),
            None
        );
    }

    #[test]
    fn a_new_incarnation_the_leader_has_not_seen_registered_is_not_counted() {
        // Seed 8912: follower 5 lost a torn tail, came back as broker epoch 39 with LEO 1; the
        // leader's metadata still holds its old epoch 4 (and so the old ISR).
        let f: SmallMap<_, _> = [(BrokerId(2), follower(2, 1, 39))].into_iter().collect();
        assert_eq!(
            leader_hw_above_isr_follower(&side(&f, 5), |_| Some(4)),
            None
        );
        // Not registered in the leader's metadata at all.
        assert_eq!(leader_hw_above_isr_follower(&side(&f, 5), |_| None), None);
        // A follower that sends no broker epoch (-1) is always judged.
        let f: SmallMap<_, _> = [(BrokerId(2), follower(2, 1, -1))].into_iter().collect();
        assert_eq!(
            leader_hw_above_isr_follower(&side(&f, 5), |_| Some(4)),
            Some((BrokerId(2), Offset(1)))
        );
    }

    #[test]
    fn kafka_windows_that_are_not_counted() {
        // Not in the maximal ISR.
        let f: SmallMap<_, _> = [(BrokerId(3), follower(3, 1, 7))].into_iter().collect();
        assert_eq!(
            leader_hw_above_isr_follower(&side(&f, 5), |_| Some(7)),
            None
        );
        // Not heard from in this epoch.
        let f: SmallMap<_, _> = [(BrokerId(2), follower(2, -1, 7))].into_iter().collect();
        assert_eq!(
            leader_hw_above_isr_follower(&side(&f, 5), |_| Some(7)),
            None
        );
        // A new leader's inherited HW at or below its epoch start.
        let f: SmallMap<_, _> = [(BrokerId(2), follower(2, 1, 7))].into_iter().collect();
        let mut s = side(&f, 5);
        s.leader_epoch_start = Offset(5);
        assert_eq!(leader_hw_above_isr_follower(&s, |_| Some(7)), None);
        // Below the leader's log start.
        let mut s = side(&f, 5);
        s.log_start = Offset(3);
        assert_eq!(leader_hw_above_isr_follower(&s, |_| Some(7)), None);
    }
}
