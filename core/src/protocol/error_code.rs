//! Kafka error codes, with Kafka's numbers, carried inside responses per partition.
//! KIP-1279 codes have no numbers yet (the KIP says TBD); they get numbers from 200 up here.

/// A Kafka (or KIP-1279) error code.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(i16)]
pub enum ErrorCode {
    /// No error.
    None = 0,
    /// Fetch offset outside `[logStart, LEO]`.
    OffsetOutOfRange = 1,
    /// A batch failed its CRC or framing check.
    CorruptMessage = 2,
    /// Unknown topic or partition.
    UnknownTopicOrPartition = 3,
    /// The broker is not the leader (or follower) for the partition.
    NotLeaderOrFollower = 6,
    /// The request timed out.
    RequestTimedOut = 7,
    /// The coordinator is loading.
    CoordinatorLoadInProgress = 14,
    /// The coordinator is not available.
    CoordinatorNotAvailable = 15,
    /// This broker is not the coordinator.
    NotCoordinator = 16,
    /// acks=all rejected: ISR below min.insync.replicas.
    NotEnoughReplicas = 19,
    /// acks=all appended but the ISR shrank below min.insync.replicas.
    NotEnoughReplicasAfterAppend = 20,
    /// Invalid required acks.
    InvalidRequiredAcks = 21,
    /// The producer epoch is stale.
    InvalidProducerEpoch = 47,
    /// A sequence gap or duplicate outside the retained window.
    OutOfOrderSequenceNumber = 45,
    /// Transactional state is invalid for the operation.
    InvalidTxnState = 48,
    /// The producer id mapping is invalid.
    InvalidProducerIdMapping = 49,
    /// Invalid request.
    InvalidRequest = 42,
    /// The topic already exists.
    TopicAlreadyExists = 36,
    /// Invalid partition count.
    InvalidPartitions = 37,
    /// Invalid replication factor.
    InvalidReplicationFactor = 38,
    /// The transaction timeout is out of range.
    InvalidTransactionTimeout = 50,
    /// The transaction coordinator is fenced.
    TransactionCoordinatorFenced = 52,
    /// The producer was fenced by a newer instance.
    ProducerFenced = 90,
    /// The request's leader epoch is older than the broker's.
    FencedLeaderEpoch = 74,
    /// The request's leader epoch is newer than the broker's.
    UnknownLeaderEpoch = 75,
    /// The leader has not yet caught its HW up to its epoch start (lagging HW).
    OffsetNotAvailable = 78,
    /// The member id is unknown (used for "group has active members").
    UnknownMemberId = 25,
    /// The topic id does not match.
    InconsistentTopicId = 103,
    /// The state epoch is fenced (reused from share groups).
    FencedStateEpoch = 124,
    /// A regular expression in the request is not valid (Kafka's `InvalidRegularExpression`;
    /// the KIP-1279 prototype's `MirrorUtils.validateRe2jPatterns` for Start/Stop patterns).
    InvalidRegularExpression = 128,
    /// Disk or I/O failure on the broker.
    KafkaStorageError = 56,
    /// An unexpected server error.
    UnknownServerError = -1,
    /// The partition has no leader (offline).
    LeaderNotAvailable = 5,
    /// Invalid or internal topic name for the operation.
    InvalidTopicException = 17,
    /// A config value is invalid.
    InvalidConfig = 40,
    /// The node is not the active controller.
    NotController = 41,
    /// The request violates a cluster policy.
    PolicyViolation = 44,
    /// The coordinator is still completing the previous transaction.
    ConcurrentTransactions = 51,
    /// The producer id is unknown to the coordinator.
    UnknownProducerId = 59,
    /// The group does not exist.
    GroupIdNotFound = 69,
    /// KIP-227: the fetch session is not in the leader's cache (e.g. the leader restarted).
    FetchSessionIdNotFound = 70,
    /// KIP-227: the fetch session's epoch is not the one the leader expects.
    InvalidFetchSessionEpoch = 71,
    /// The broker epoch is older than the registration.
    StaleBrokerEpoch = 77,
    /// Another incarnation of the broker id still holds a live session (KRaft).
    DuplicateBrokerRegistration = 101,
    /// The preferred leader is not available.
    PreferredLeaderNotAvailable = 80,
    /// No eligible leader for the election type.
    EligibleLeadersNotAvailable = 83,
    /// The partition already has a leader.
    ElectionNotNeeded = 84,
    /// Unknown topic id.
    UnknownTopicId = 100,
    /// A new leader was elected while the change was in flight.
    NewLeaderElected = 106,
    /// A replica is not eligible for the ISR.
    IneligibleReplica = 107,
    /// The partition epoch is stale.
    InvalidUpdateVersion = 108,
    /// KIP-1279: writes to a mirror topic that is not STOPPED.
    ReadOnlyTopic = 200,
    /// KIP-1279: operation not valid in the mirror topic's state.
    InvalidMirrorState = 201,
    /// KIP-1279: the mirror already exists.
    ClusterMirrorAlreadyExists = 202,
    /// KIP-1279: unknown mirror.
    UnknownClusterMirror = 203,
    /// KIP-1279: the mirror still has topics that are not stopped.
    ClusterMirrorNotEmpty = 204,
    /// KIP-1279: partition states do not allow the operation.
    InvalidClusterMirrorStates = 205,
    /// KIP-1279: mirror names may not end in `.paused` or `.removed`.
    InvalidClusterMirrorName = 206,
    /// KIP-1279: the topic belongs to another active mirror.
    TopicAlreadyInClusterMirror = 207,
    /// KIP-1279: the topic is not in this mirror.
    TopicNotInClusterMirror = 208,
    /// KIP-1279: the mirror topic is not stopped.
    MirrorTopicNotStopped = 209,
    /// KIP-1279: the mirror topic is being stopped.
    MirrorTopicBeingStopped = 210,
    /// KIP-1279: the mirror topic is already paused.
    MirrorTopicAlreadyPaused = 211,
    /// KIP-1279: the mirror topic is not paused.
    MirrorTopicNotPaused = 212,
    /// KIP-1279: the mirror topic is already stopped.
    MirrorTopicAlreadyStopped = 213,
    /// KIP-1279: the mirror partition's state does not allow the operation.
    InvalidMirrorPartitionState = 214,
    /// KIP-1279: the mirror's config is not (yet) known to the broker.
    MirrorConfigNotAvailable = 215,
    /// KIP-1279: the source cluster's metadata is not available.
    SourceMetadataNotAvailable = 216,
}

impl ErrorCode {
    /// Kafka's numeric code.
    #[must_use]
    pub fn code(self) -> i16 {
        self as i16
    }

    /// True for `None`.
    #[must_use]
    pub fn is_ok(self) -> bool {
        self == ErrorCode::None
    }

    /// Kafka's name, as printed in traces (`FENCED_LEADER_EPOCH`).
    #[must_use]
    pub fn name(self) -> &'static str {
        use ErrorCode::*;
        match self {
            None => "NONE",
            OffsetOutOfRange => "OFFSET_OUT_OF_RANGE",
            CorruptMessage => "CORRUPT_MESSAGE",
            UnknownTopicOrPartition => "UNKNOWN_TOPIC_OR_PARTITION",
            NotLeaderOrFollower => "NOT_LEADER_OR_FOLLOWER",
            RequestTimedOut => "REQUEST_TIMED_OUT",
            CoordinatorLoadInProgress => "COORDINATOR_LOAD_IN_PROGRESS",
            CoordinatorNotAvailable => "COORDINATOR_NOT_AVAILABLE",
            NotCoordinator => "NOT_COORDINATOR",
            NotEnoughReplicas => "NOT_ENOUGH_REPLICAS",
            NotEnoughReplicasAfterAppend => "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            InvalidRequiredAcks => "INVALID_REQUIRED_ACKS",
            InvalidProducerEpoch => "INVALID_PRODUCER_EPOCH",
            OutOfOrderSequenceNumber => "OUT_OF_ORDER_SEQUENCE_NUMBER",
            InvalidTxnState => "INVALID_TXN_STATE",
            InvalidProducerIdMapping => "INVALID_PRODUCER_ID_MAPPING",
            InvalidRequest => "INVALID_REQUEST",
            TopicAlreadyExists => "TOPIC_ALREADY_EXISTS",
            InvalidPartitions => "INVALID_PARTITIONS",
            InvalidReplicationFactor => "INVALID_REPLICATION_FACTOR",
            InvalidTransactionTimeout => "INVALID_TRANSACTION_TIMEOUT",
            TransactionCoordinatorFenced => "TRANSACTION_COORDINATOR_FENCED",
            ProducerFenced => "PRODUCER_FENCED",
            FencedLeaderEpoch => "FENCED_LEADER_EPOCH",
            UnknownLeaderEpoch => "UNKNOWN_LEADER_EPOCH",
            OffsetNotAvailable => "OFFSET_NOT_AVAILABLE",
            UnknownMemberId => "UNKNOWN_MEMBER_ID",
            InconsistentTopicId => "INCONSISTENT_TOPIC_ID",
            FencedStateEpoch => "FENCED_STATE_EPOCH",
            KafkaStorageError => "KAFKA_STORAGE_ERROR",
            UnknownServerError => "UNKNOWN_SERVER_ERROR",
            LeaderNotAvailable => "LEADER_NOT_AVAILABLE",
            InvalidTopicException => "INVALID_TOPIC_EXCEPTION",
            InvalidConfig => "INVALID_CONFIG",
            NotController => "NOT_CONTROLLER",
            PolicyViolation => "POLICY_VIOLATION",
            ConcurrentTransactions => "CONCURRENT_TRANSACTIONS",
            UnknownProducerId => "UNKNOWN_PRODUCER_ID",
            GroupIdNotFound => "GROUP_ID_NOT_FOUND",
            FetchSessionIdNotFound => "FETCH_SESSION_ID_NOT_FOUND",
            InvalidFetchSessionEpoch => "INVALID_FETCH_SESSION_EPOCH",
            StaleBrokerEpoch => "STALE_BROKER_EPOCH",
            DuplicateBrokerRegistration => "DUPLICATE_BROKER_REGISTRATION",
            PreferredLeaderNotAvailable => "PREFERRED_LEADER_NOT_AVAILABLE",
            EligibleLeadersNotAvailable => "ELIGIBLE_LEADERS_NOT_AVAILABLE",
            ElectionNotNeeded => "ELECTION_NOT_NEEDED",
            UnknownTopicId => "UNKNOWN_TOPIC_ID",
            NewLeaderElected => "NEW_LEADER_ELECTED",
            IneligibleReplica => "INELIGIBLE_REPLICA",
            InvalidUpdateVersion => "INVALID_UPDATE_VERSION",
            ReadOnlyTopic => "READ_ONLY_TOPIC",
            InvalidMirrorState => "INVALID_MIRROR_STATE",
            ClusterMirrorAlreadyExists => "CLUSTER_MIRROR_ALREADY_EXISTS",
            UnknownClusterMirror => "UNKNOWN_CLUSTER_MIRROR",
            ClusterMirrorNotEmpty => "CLUSTER_MIRROR_NOT_EMPTY",
            InvalidClusterMirrorStates => "INVALID_CLUSTER_MIRROR_STATES",
            InvalidClusterMirrorName => "INVALID_CLUSTER_MIRROR_NAME",
            TopicAlreadyInClusterMirror => "TOPIC_ALREADY_IN_CLUSTER_MIRROR",
            TopicNotInClusterMirror => "TOPIC_NOT_IN_CLUSTER_MIRROR",
            MirrorTopicNotStopped => "MIRROR_TOPIC_NOT_STOPPED",
            MirrorTopicBeingStopped => "MIRROR_TOPIC_BEING_STOPPED",
            MirrorTopicAlreadyPaused => "MIRROR_TOPIC_ALREADY_PAUSED",
            MirrorTopicNotPaused => "MIRROR_TOPIC_NOT_PAUSED",
            MirrorTopicAlreadyStopped => "MIRROR_TOPIC_ALREADY_STOPPED",
            InvalidMirrorPartitionState => "INVALID_MIRROR_PARTITION_STATE",
            MirrorConfigNotAvailable => "MIRROR_CONFIG_NOT_AVAILABLE",
            SourceMetadataNotAvailable => "SOURCE_METADATA_NOT_AVAILABLE",
            InvalidRegularExpression => "INVALID_REGULAR_EXPRESSION",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
