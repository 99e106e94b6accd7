//! ACLs at the controller (Kafka: `AclControlManager`): `CreateAcls` and `DeleteAcls`
//! decide `AccessControlEntryRecord` / `RemoveAccessControlEntryRecord`s; the ACLs
//! themselves live in the metadata image every broker applies (`image.acls`).
//!
//! Rules transcribed from Kafka:
//! - `validateNewAcl`: a binding needs a non-empty resource name and a principal of the
//!   form `Type:name`; a CLUSTER binding must name `kafka-cluster` (the broker's
//!   `AuthHelper` check, made here so one place validates). ANY/UNKNOWN values cannot be
//!   expressed by the enums, so they need no check. Each creation gets its own result.
//! - Idempotence: creating a binding equal to an existing one (or to an earlier creation of
//!   the same request) succeeds and writes no record.
//! - `deleteAcls`: each filter lists every ACL it matches; an ACL matched by several filters
//!   of one request is removed by one record but listed in each filter's result.
//! - Ids are Kafka `Uuid`s there; here they are made from the cluster and the record's
//!   offset, so they are unique, deterministic and replayed unchanged after a restart.

use std::collections::BTreeSet;

use super::quorum_controller::Controller;
use crate::broker::MetadataImage;
use crate::protocol::acl::{
    AclBinding, AclBindingFilter, AclId, AclResourceType, CLUSTER_RESOURCE_NAME,
    DeleteAclsFilterResult,
};
use crate::protocol::metadata::MetadataRecord;
use crate::protocol::{ErrorCode, Response};

/// Why a binding cannot be created (all INVALID_REQUEST, as Kafka's
/// `InvalidRequestException`s).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    /// The resource name is empty.
    #[error("Resource name should not be empty")]
    EmptyResourceName,
    /// The principal has no `Type:` part.
    #[error(
        "Could not parse principal from `{0}` (no colon is present separating the principal type from the principal name)"
    )]
    InvalidPrincipal(String),
    /// A CLUSTER binding for another name.
    #[error("The only valid name for the CLUSTER resource is kafka-cluster")]
    InvalidClusterName(String),
}

impl From<&AclError> for ErrorCode {
    fn from(_: &AclError) -> Self {
        ErrorCode::InvalidRequest
    }
}

/// Kafka `AclControlManager.validateNewAcl` (+ the broker's CLUSTER name check).
///
/// # Errors
/// The first rule `binding` breaks.
pub fn validate_new_acl(binding: &AclBinding) -> Result<(), AclError> {
    if binding.pattern.name.is_empty() {
        return Err(AclError::EmptyResourceName);
    }
    if !binding.entry.principal.contains(':') {
        return Err(AclError::InvalidPrincipal(binding.entry.principal.clone()));
    }
    if binding.pattern.resource_type == AclResourceType::Cluster
        && binding.pattern.name != CLUSTER_RESOURCE_NAME
    {
        return Err(AclError::InvalidClusterName(binding.pattern.name.clone()));
    }
    Ok(())
}

/// What `CreateAcls` decides: the per-creation results and the bindings to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateAclsDecision {
    /// Per creation, in request order.
    pub results: Vec<Result<(), AclError>>,
    /// New bindings (not in the image, not repeated), in request order.
    pub new: Vec<AclBinding>,
}

/// Kafka `AclControlManager.createAcls` as a pure decision over `image`.
#[must_use]
pub fn decide_create_acls(image: &MetadataImage, creations: &[AclBinding]) -> CreateAclsDecision {
    let existing: BTreeSet<&AclBinding> = image.acls.values().collect();
    let mut seen: BTreeSet<&AclBinding> = BTreeSet::new();
    let mut results = Vec::with_capacity(creations.len());
    let mut new = Vec::new();
    for b in creations {
        let r = validate_new_acl(b);
        if r.is_ok() && !existing.contains(b) && seen.insert(b) {
            new.push(b.clone());
        }
        results.push(r);
    }
    CreateAclsDecision { results, new }
}

/// What `DeleteAcls` decides: per filter the matched bindings, and the ids to remove once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteAclsDecision {
    /// Per filter, in request order: the bindings it matched, sorted.
    pub results: Vec<Vec<AclBinding>>,
    /// Ids to remove (each once).
    pub remove: BTreeSet<AclId>,
}

/// Kafka `AclControlManager.deleteAcls` as a pure decision over `image`.
#[must_use]
pub fn decide_delete_acls(
    image: &MetadataImage,
    filters: &[AclBindingFilter],
) -> DeleteAclsDecision {
    let mut remove = BTreeSet::new();
    let mut results = Vec::with_capacity(filters.len());
    for f in filters {
        let mut matched = Vec::new();
        for (id, b) in image.acls.iter().filter(|(_, b)| f.matches(b)) {
            remove.insert(*id);
            matched.push(b.clone());
        }
        matched.sort();
        results.push(matched);
    }
    DeleteAclsDecision { results, remove }
}

impl Controller {
    /// A fresh ACL id: `(cluster + 1) << 64 | (offset + 1)` of the record that will carry
    /// it. Unique (one record per offset), never zero, distinct across clusters.
    fn new_acl_id(&self) -> AclId {
        let high = (u128::from(self.config().cluster.0) + 1) << 64;
        let offset = u64::try_from(self.image().offset + 1).unwrap_or(0);
        AclId(high | u128::from(offset + 1))
    }

    /// Kafka `CreateAcls` at the controller.
    pub(super) fn on_create_acls(&mut self, creations: &[AclBinding]) -> Response {
        let d = decide_create_acls(self.image(), creations);
        for binding in d.new {
            let id = self.new_acl_id();
            self.append(MetadataRecord::AccessControlEntry { id, binding });
        }
        Response::CreateAcls {
            results: d
                .results
                .iter()
                .map(|r| match r {
                    Ok(()) => (ErrorCode::None, None),
                    Err(e) => (e.into(), Some(e.to_string())),
                })
                .collect(),
        }
    }

    /// Kafka `DeleteAcls` at the controller.
    pub(super) fn on_delete_acls(&mut self, filters: &[AclBindingFilter]) -> Response {
        let d = decide_delete_acls(self.image(), filters);
        for id in d.remove {
            self.append(MetadataRecord::RemoveAccessControlEntry { id });
        }
        Response::DeleteAcls {
            results: d
                .results
                .into_iter()
                .map(|matching| DeleteAclsFilterResult {
                    error: ErrorCode::None,
                    message: None,
                    matching,
                })
                .collect(),
        }
    }
}
