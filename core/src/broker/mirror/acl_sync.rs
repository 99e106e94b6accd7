//! KIP-1279 ACL sync, one step of the mirror coordinator's metadata-sync round
//! ([`super::sync`]; spec kip1279.md A.1 "Metadata sync ... ACLs", B §8.11, §5.2).
//!
//! Each round, once phase 1 has found the topics that are desired MIRRORING with a partition
//! persisted MIRRORING, the coordinator sends `DescribeAcls` (TOPIC resources) to a source
//! broker and answers with at most one `CreateAcls` and one `DeleteAcls` to its controller,
//! as [`plan_acl_sync`] decides.
//!
//! Decisions (with provenance):
//! - **What is synced.** The prototype describes every source ACL and keeps those the
//!   mirror config `acls.include` (`mirror.acl.include`, B §5.2, default `*`) includes
//!   [CODE ClusterMirrorConfig]. A.1 limits metadata sync to MIRRORING partitions, so here an
//!   ACL is synced only when it is a TOPIC ACL whose pattern applies to a topic of this
//!   mirror that is MIRRORING now: the literal name of the topic, a PREFIXED pattern whose
//!   prefix starts the name, or the literal wildcard `*`. ACLs of other resource types
//!   (groups, cluster, transactional ids) and of topics that are not mirrored, PAUSED,
//!   STOPPING or STOPPED are never touched, so nothing is synced after STOPPED.
//! - **Deletion (S30).** The prototype deletes destination ACLs that are not on the source
//!   (except CLUSTER_MIRROR ones) [B §8.11, CODE]. That is followed, narrowed to ACLs the
//!   mirror *owns*: in scope as above and applying to no destination topic other than this
//!   mirror's MIRRORING topics. An ACL deleted on the source therefore disappears from the
//!   destination while its topic mirrors; an ACL created on the destination for a stopped
//!   (failed-over) topic, or a wildcard/prefix that also covers other topics, is never
//!   deleted (B corner case 7: the prototype's rule could delete ACLs of post-failover
//!   producers). MSK's "never delete" (scenarios S30) is not the KIP's answer.
//! - **Switch.** `acls.include` empty disables ACL sync (no rule includes anything); a value
//!   that does not parse disables it too (fail closed) and the round syncs no ACL.
//!   Rules are `resourceType;resourceName;operation;permissionType;principal`, `*` for any
//!   field, trailing fields optional. The prototype's resourceName is a regex; here it is an
//!   exact name or `*` (core has no regex engine).
//! - Destination ACLs are read from this broker's image (the coordinator is a destination
//!   broker), source ACLs from one source broker's image: either may lag its controller,
//!   so a round may re-create an ACL that exists (idempotent) or miss a fresh one (next
//!   round).

use std::collections::BTreeSet;

use super::sync::SyncStep;
use crate::broker::broker::Broker;
use crate::broker::output::Event;
use crate::protocol::acl::{
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AclResourceType,
    PatternTypeFilter, WILDCARD_RESOURCE,
};
use crate::protocol::{ErrorCode, Request, Response};

/// Mirror config: which ACLs the sync may copy (B §5.2 `acls.include` /
/// `mirror.acl.include`). Comma-separated rules; empty = sync no ACL.
pub const ACLS_INCLUDE_CONFIG: &str = "acls.include";
/// Default of [`ACLS_INCLUDE_CONFIG`] (B §5.2): every ACL.
pub const DEFAULT_ACLS_INCLUDE: &str = "*";

/// One `acls.include` rule; `None` = `*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclIncludeRule {
    /// Resource type.
    pub resource_type: Option<AclResourceType>,
    /// Resource (pattern) name, compared exactly.
    pub resource_name: Option<String>,
    /// Operation.
    pub operation: Option<AclOperation>,
    /// Permission type.
    pub permission_type: Option<AclPermissionType>,
    /// Principal.
    pub principal: Option<String>,
}

/// Why an `acls.include` value does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AclRuleError {
    /// Not a Kafka resource type.
    #[error("unknown resource type {0:?} in acls.include")]
    UnknownResourceType(String),
    /// Not a Kafka operation.
    #[error("unknown operation {0:?} in acls.include")]
    UnknownOperation(String),
    /// Not ALLOW or DENY.
    #[error("unknown permission type {0:?} in acls.include")]
    UnknownPermissionType(String),
    /// More than five fields.
    #[error("too many fields in acls.include rule {0:?}")]
    TooManyFields(String),
}

fn field(s: Option<&str>) -> Option<&str> {
    s.map(str::trim).filter(|f| !f.is_empty() && *f != "*")
}

impl AclIncludeRule {
    /// Parses one rule (`resourceType;resourceName;operation;permissionType;principal`).
    ///
    /// # Errors
    /// An unknown enum name or more than five fields.
    pub fn parse(rule: &str) -> Result<Self, AclRuleError> {
        let mut it = rule.split(';');
        let (t, n, o, p, pr) = (it.next(), it.next(), it.next(), it.next(), it.next());
        if it.next().is_some() {
            return Err(AclRuleError::TooManyFields(rule.to_string()));
        }
        let resource_type = field(t)
            .map(|s| AclResourceType::parse(s).ok_or(AclRuleError::UnknownResourceType(s.into())))
            .transpose()?;
        let operation = field(o)
            .map(|s| AclOperation::parse(s).ok_or(AclRuleError::UnknownOperation(s.into())))
            .transpose()?;
        let permission_type = field(p)
            .map(|s| {
                AclPermissionType::parse(s).ok_or(AclRuleError::UnknownPermissionType(s.into()))
            })
            .transpose()?;
        Ok(Self {
            resource_type,
            resource_name: field(n).map(str::to_string),
            operation,
            permission_type,
            principal: field(pr).map(str::to_string),
        })
    }

    /// True when the rule includes `b`.
    #[must_use]
    pub fn includes(&self, b: &AclBinding) -> bool {
        self.resource_type
            .is_none_or(|t| t == b.pattern.resource_type)
            && self
                .resource_name
                .as_ref()
                .is_none_or(|n| *n == b.pattern.name)
            && self.operation.is_none_or(|o| o == b.entry.operation)
            && self
                .permission_type
                .is_none_or(|p| p == b.entry.permission_type)
            && self
                .principal
                .as_ref()
                .is_none_or(|p| *p == b.entry.principal)
    }
}

/// Parses an `acls.include` value (`None` = the default, every ACL).
///
/// # Errors
/// The first rule that does not parse.
pub fn parse_acls_include(value: Option<&str>) -> Result<Vec<AclIncludeRule>, AclRuleError> {
    value
        .unwrap_or(DEFAULT_ACLS_INCLUDE)
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(AclIncludeRule::parse)
        .collect()
}

/// What one round changes on the destination.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AclSyncPlan {
    /// Source ACLs in scope that the destination lacks, sorted.
    pub create: Vec<AclBinding>,
    /// Destination ACLs the mirror owns that the source no longer has, sorted.
    pub delete: Vec<AclBinding>,
}

/// The ACL sync decision (see the module doc for the rules and their provenance).
/// `mirroring`: this mirror's topics that are MIRRORING now; `destination_topics`: every
/// topic of the destination cluster; `include`: the parsed `acls.include`.
#[must_use]
pub fn plan_acl_sync(
    source: &[AclBinding],
    destination: &[AclBinding],
    mirroring: &BTreeSet<String>,
    destination_topics: &BTreeSet<String>,
    include: &[AclIncludeRule],
) -> AclSyncPlan {
    let in_scope = |b: &AclBinding| {
        b.pattern.resource_type == AclResourceType::Topic
            && include.iter().any(|r| r.includes(b))
            && mirroring
                .iter()
                .any(|t| b.pattern.applies_to(AclResourceType::Topic, t))
    };
    let owned = |b: &AclBinding| {
        in_scope(b)
            && b.pattern.name != WILDCARD_RESOURCE
            && destination_topics
                .iter()
                .filter(|t| b.pattern.applies_to(AclResourceType::Topic, t))
                .all(|t| mirroring.contains(t))
    };
    let src: BTreeSet<&AclBinding> = source.iter().collect();
    let dst: BTreeSet<&AclBinding> = destination.iter().collect();
    AclSyncPlan {
        create: src
            .iter()
            .filter(|b| in_scope(b) && !dst.contains(*b))
            .map(|b| (*b).clone())
            .collect(),
        delete: dst
            .iter()
            .filter(|b| owned(b) && !src.contains(*b))
            .map(|b| (*b).clone())
            .collect(),
    }
}

/// The filter the coordinator sends the source: every TOPIC ACL.
#[must_use]
pub fn source_topic_acls_filter() -> AclBindingFilter {
    AclBindingFilter {
        resource_type: Some(AclResourceType::Topic),
        pattern_type: PatternTypeFilter::Any,
        ..AclBindingFilter::any()
    }
}

impl Broker {
    /// This mirror's topics eligible for metadata sync in the current round: desired
    /// MIRRORING now and with a partition the round found persisted MIRRORING.
    fn acl_sync_topics(&self, mirror: &str) -> BTreeSet<String> {
        let Some(r) = self.mirror_sync.rounds.get(mirror) else {
            return BTreeSet::new();
        };
        r.mirroring()
            .iter()
            .map(|tp| tp.topic.to_string())
            .filter(|t| self.desired_mirroring(mirror, t))
            .collect()
    }

    /// The source's TOPIC ACLs arrived: create and delete on the destination as planned.
    pub(in crate::broker) fn on_sync_source_acls(
        &mut self,
        mirror: &str,
        round: u64,
        resp: Option<Response>,
    ) {
        let Some(Response::DescribeAcls {
            error: ErrorCode::None,
            acls: source,
        }) = resp
        else {
            return; // the next round asks again
        };
        let Ok(include) = parse_acls_include(self.mirror_config(mirror, ACLS_INCLUDE_CONFIG))
        else {
            return; // fail closed: an unparsable include list syncs nothing
        };
        let mirroring = self.acl_sync_topics(mirror);
        let destination: Vec<AclBinding> = self.image.acls.values().cloned().collect();
        let topics: BTreeSet<String> = self.image.topic_ids.keys().cloned().collect();
        let plan = plan_acl_sync(&source, &destination, &mirroring, &topics, &include);
        let controller = self.controller();
        if !plan.create.is_empty() {
            let req = Request::CreateAcls {
                creations: plan.create.clone(),
            };
            let step = SyncStep::CreateAcls(plan.create);
            self.sync_send(mirror, round, controller, req, step);
        }
        if !plan.delete.is_empty() {
            let req = Request::DeleteAcls {
                filters: plan.delete.iter().map(AclBindingFilter::exact).collect(),
            };
            let step = SyncStep::DeleteAcls(plan.delete);
            self.sync_send(mirror, round, controller, req, step);
        }
    }

    /// Reports a `CreateAcls` / `DeleteAcls` the sync sent (failures retry next round).
    pub(in crate::broker) fn on_sync_acls_result(
        &mut self,
        mirror: &str,
        acls: Vec<AclBinding>,
        deleted: bool,
        resp: Option<&Response>,
    ) {
        let error = match resp {
            Some(Response::CreateAcls { results }) => results
                .iter()
                .map(|r| r.0)
                .find(|e| !e.is_ok())
                .unwrap_or(ErrorCode::None),
            Some(Response::DeleteAcls { results }) => results
                .iter()
                .map(|r| r.error)
                .find(|e| !e.is_ok())
                .unwrap_or(ErrorCode::None),
            Some(Response::Error { error }) => *error,
            Some(_) => ErrorCode::UnknownServerError,
            None => ErrorCode::RequestTimedOut,
        };
        self.emit(Event::MirrorAclsSynced {
            mirror: mirror.to_string(),
            deleted,
            acls: acls.iter().map(ToString::to_string).collect(),
            error,
        });
    }
}

#[cfg(test)]
#[path = "acl_sync_test.rs"]
mod tests;
