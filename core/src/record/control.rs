//! Control records (Kafka: `ControlRecordType`, `EndTransactionMarker`).
//!
//! A control batch holds exactly one control record. Its key is `version: i16, type: i16`;
//! the value depends on the type. COMMIT/ABORT values are `version: i16, coordinatorEpoch: i32`.
//! `MIRROR_PID_RESET` (type 7 in the KIP-1279 prototype) carries `version: i16` and occupies one
//! offset; it expires every producer-state entry where it is applied.

use bytes::{BufMut, Bytes, BytesMut};

/// The control record type ids, as in Kafka's `ControlRecordType` (the prototype adds 7).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ControlRecordType {
    /// Transaction aborted (0).
    Abort,
    /// Transaction committed (1).
    Commit,
    /// KIP-1279: expire all producer state at this offset (7).
    MirrorPidReset,
    /// Any other id (KRaft's LEADER_CHANGE etc., or unknown): ignored by producer state.
    Other(i16),
}

impl ControlRecordType {
    /// The wire id.
    #[must_use]
    pub fn type_id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::MirrorPidReset => 7,
            ControlRecordType::Other(id) => id,
        }
    }

    /// Parses a wire id.
    #[must_use]
    pub fn from_type_id(id: i16) -> Self {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            7 => ControlRecordType::MirrorPidReset,
            other => ControlRecordType::Other(other),
        }
    }
}

/// A decoded control record.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ControlRecord {
    /// A transaction marker: COMMIT (`commit = true`) or ABORT.
    EndTxn {
        /// True for COMMIT, false for ABORT.
        commit: bool,
        /// The transaction coordinator's epoch that wrote the marker.
        coordinator_epoch: i32,
    },
    /// KIP-1279 `MIRROR_PID_RESET`: every producer-state entry expires at this offset.
    MirrorPidReset,
    /// A control type that producer state ignores.
    Other(i16),
}

impl ControlRecord {
    /// A COMMIT marker.
    #[must_use]
    pub fn commit(coordinator_epoch: i32) -> Self {
        ControlRecord::EndTxn {
            commit: true,
            coordinator_epoch,
        }
    }

    /// An ABORT marker.
    #[must_use]
    pub fn abort(coordinator_epoch: i32) -> Self {
        ControlRecord::EndTxn {
            commit: false,
            coordinator_epoch,
        }
    }

    /// The record's type.
    #[must_use]
    pub fn record_type(&self) -> ControlRecordType {
        match *self {
            ControlRecord::EndTxn { commit: true, .. } => ControlRecordType::Commit,
            ControlRecord::EndTxn { commit: false, .. } => ControlRecordType::Abort,
            ControlRecord::MirrorPidReset => ControlRecordType::MirrorPidReset,
            ControlRecord::Other(id) => ControlRecordType::Other(id),
        }
    }

    /// The key bytes: `version 0, type`.
    #[must_use]
    pub fn key_bytes(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(4);
        b.put_i16(0);
        b.put_i16(self.record_type().type_id());
        b.freeze()
    }

    /// The value bytes.
    #[must_use]
    pub fn value_bytes(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(6);
        match *self {
            ControlRecord::EndTxn {
                coordinator_epoch, ..
            } => {
                b.put_i16(0);
                b.put_i32(coordinator_epoch);
            }
            ControlRecord::MirrorPidReset | ControlRecord::Other(_) => b.put_i16(0),
        }
        b.freeze()
    }

    /// Decodes a control record from its key and value (Kafka: `ControlRecordType.parse`,
    /// `EndTransactionMarker.deserializeValue`). `None` when the key or value is malformed.
    #[must_use]
    pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>) -> Option<Self> {
        let key = key?;
        if key.len() < 4 {
            return None;
        }
        let version = i16::from_be_bytes([key[0], key[1]]);
        if version < 0 {
            return None;
        }
        let type_id = i16::from_be_bytes([key[2], key[3]]);
        Some(match ControlRecordType::from_type_id(type_id) {
            ControlRecordType::Abort | ControlRecordType::Commit => {
                let v = value?;
                if v.len() < 6 {
                    return None;
                }
                ControlRecord::EndTxn {
                    commit: type_id == 1,
                    coordinator_epoch: i32::from_be_bytes([v[2], v[3], v[4], v[5]]),
                }
            }
            ControlRecordType::MirrorPidReset => ControlRecord::MirrorPidReset,
            ControlRecordType::Other(id) => ControlRecord::Other(id),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_records_round_trip() {
        for rec in [
            ControlRecord::commit(3),
            ControlRecord::abort(-1),
            ControlRecord::MirrorPidReset,
            ControlRecord::Other(2),
        ] {
            let k = rec.key_bytes();
            let v = rec.value_bytes();
            assert_eq!(ControlRecord::decode(Some(&k), Some(&v)), Some(rec));
        }
    }

    #[test]
    fn malformed_control_keys_are_rejected() {
        assert_eq!(ControlRecord::decode(None, None), None);
        assert_eq!(ControlRecord::decode(Some(&[0, 0, 0]), None), None);
        // negative version: Kafka throws InvalidRecordException
        assert_eq!(
            ControlRecord::decode(Some(&[0xff, 0xff, 0, 1]), Some(&[0; 6])),
            None
        );
        // a COMMIT without a full value
        assert_eq!(
            ControlRecord::decode(Some(&[0, 0, 0, 1]), Some(&[0, 0])),
            None
        );
    }
}
