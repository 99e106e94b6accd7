//! Kafka's ACL vocabulary (`org.apache.kafka.common.acl` / `.resource`): bindings, the
//! filters `DescribeAcls` and `DeleteAcls` take, and the matching rules of
//! `ResourcePatternFilter.matches` and `AccessControlEntryFilter.matches`.
//!
//! Kafka's `ANY` and `UNKNOWN` enum values are not members of these enums: a binding can
//! never hold them (the controller would refuse it with INVALID_REQUEST), and a filter says
//! "any" with `None`. KIP-1279 RS5 adds the resource type `ClusterMirror`.

use std::fmt;

/// The name of Kafka's single CLUSTER resource (`Resource.CLUSTER_NAME`).
pub const CLUSTER_RESOURCE_NAME: &str = "kafka-cluster";
/// A LITERAL pattern with this name applies to every resource of its type
/// (`ResourcePattern.WILDCARD_RESOURCE`).
pub const WILDCARD_RESOURCE: &str = "*";

/// Kafka `ResourceType` (without ANY/UNKNOWN).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub enum AclResourceType {
    /// `TOPIC`.
    Topic,
    /// `GROUP`.
    Group,
    /// `CLUSTER`.
    Cluster,
    /// `TRANSACTIONAL_ID`.
    TransactionalId,
    /// `DELEGATION_TOKEN`.
    DelegationToken,
    /// `USER`.
    User,
    /// KIP-1279 RS5: `CLUSTER_MIRROR`.
    ClusterMirror,
}

impl AclResourceType {
    /// Kafka's name (`ResourceType.toString`), as `acls.include` rules spell it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Topic => "TOPIC",
            Self::Group => "GROUP",
            Self::Cluster => "CLUSTER",
            Self::TransactionalId => "TRANSACTIONAL_ID",
            Self::DelegationToken => "DELEGATION_TOKEN",
            Self::User => "USER",
            Self::ClusterMirror => "CLUSTER_MIRROR",
        }
    }

    /// Parses Kafka's name, case-insensitively (`ResourceType.fromString`).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Topic,
            Self::Group,
            Self::Cluster,
            Self::TransactionalId,
            Self::DelegationToken,
            Self::User,
            Self::ClusterMirror,
        ]
        .into_iter()
        .find(|t| t.name().eq_ignore_ascii_case(s.trim()))
    }
}

/// Kafka `PatternType` of a binding: LITERAL or PREFIXED (MATCH and ANY are filter-only).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub enum PatternType {
    /// The name is the resource's name (or `*`: every resource).
    Literal,
    /// The name is a prefix of the resources' names.
    Prefixed,
}

/// Kafka `AclOperation` (without ANY/UNKNOWN).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub enum AclOperation {
    /// `ALL`.
    All,
    /// `READ`.
    Read,
    /// `WRITE`.
    Write,
    /// `CREATE`.
    Create,
    /// `DELETE`.
    Delete,
    /// `ALTER`.
    Alter,
    /// `DESCRIBE`.
    Describe,
    /// `CLUSTER_ACTION`.
    ClusterAction,
    /// `DESCRIBE_CONFIGS`.
    DescribeConfigs,
    /// `ALTER_CONFIGS`.
    AlterConfigs,
    /// `IDEMPOTENT_WRITE`.
    IdempotentWrite,
}

impl AclOperation {
    /// Kafka's name, as `acls.include` rules spell it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::All => "ALL",
            Self::Read => "READ",
            Self::Write => "WRITE",
            Self::Create => "CREATE",
            Self::Delete => "DELETE",
            Self::Alter => "ALTER",
            Self::Describe => "DESCRIBE",
            Self::ClusterAction => "CLUSTER_ACTION",
            Self::DescribeConfigs => "DESCRIBE_CONFIGS",
            Self::AlterConfigs => "ALTER_CONFIGS",
            Self::IdempotentWrite => "IDEMPOTENT_WRITE",
        }
    }

    /// Parses Kafka's name, case-insensitively.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::All,
            Self::Read,
            Self::Write,
            Self::Create,
            Self::Delete,
            Self::Alter,
            Self::Describe,
            Self::ClusterAction,
            Self::DescribeConfigs,
            Self::AlterConfigs,
            Self::IdempotentWrite,
        ]
        .into_iter()
        .find(|o| o.name().eq_ignore_ascii_case(s.trim()))
    }
}

/// Kafka `AclPermissionType` (without ANY/UNKNOWN).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub enum AclPermissionType {
    /// `ALLOW`.
    Allow,
    /// `DENY`.
    Deny,
}

impl AclPermissionType {
    /// Parses Kafka's name, case-insensitively.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_uppercase().as_str() {
            "ALLOW" => Some(Self::Allow),
            "DENY" => Some(Self::Deny),
            _ => None,
        }
    }
}

/// Kafka `ResourcePattern`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct ResourcePattern {
    /// Resource type.
    pub resource_type: AclResourceType,
    /// Name, prefix, or `*`.
    pub name: String,
    /// LITERAL or PREFIXED.
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    /// True when this pattern applies to the resource `(resource_type, name)` (Kafka's
    /// authorizer: a LITERAL pattern with the same name or `*`, or a PREFIXED pattern whose
    /// name is a prefix of `name`).
    #[must_use]
    pub fn applies_to(&self, resource_type: AclResourceType, name: &str) -> bool {
        self.resource_type == resource_type
            && match self.pattern_type {
                PatternType::Literal => self.name == name || self.name == WILDCARD_RESOURCE,
                PatternType::Prefixed => name.starts_with(self.name.as_str()),
            }
    }
}

/// Kafka `AccessControlEntry`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct AccessControlEntry {
    /// `Type:name`, e.g. `User:alice`.
    pub principal: String,
    /// Host, `*` for any.
    pub host: String,
    /// Operation.
    pub operation: AclOperation,
    /// ALLOW or DENY.
    pub permission_type: AclPermissionType,
}

/// Kafka `AclBinding`: a pattern and an entry. Two bindings with equal fields are the same
/// ACL (the controller keeps one; `StandardAcl` equality).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct AclBinding {
    /// The resources.
    pub pattern: ResourcePattern,
    /// Who may (not) do what from where.
    pub entry: AccessControlEntry,
}

impl AclBinding {
    /// A binding, in the order `kafka-acls.sh` prints it.
    #[must_use]
    pub fn new(
        resource_type: AclResourceType,
        name: &str,
        pattern_type: PatternType,
        principal: &str,
        operation: AclOperation,
        permission_type: AclPermissionType,
    ) -> Self {
        Self {
            pattern: ResourcePattern {
                resource_type,
                name: name.to_string(),
                pattern_type,
            },
            entry: AccessControlEntry {
                principal: principal.to_string(),
                host: WILDCARD_RESOURCE.to_string(),
                operation,
                permission_type,
            },
        }
    }
}

impl fmt::Display for AclBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.pattern;
        let e = &self.entry;
        write!(
            f,
            "{}:{}:{}/{}@{} {} {}",
            p.resource_type.name(),
            match p.pattern_type {
                PatternType::Literal => "LITERAL",
                PatternType::Prefixed => "PREFIXED",
            },
            p.name,
            e.principal,
            e.host,
            e.operation.name(),
            match e.permission_type {
                AclPermissionType::Allow => "ALLOW",
                AclPermissionType::Deny => "DENY",
            }
        )
    }
}

/// The pattern-type part of a filter (Kafka `PatternType` as a filter).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub enum PatternTypeFilter {
    /// `ANY`: any pattern type, the name compared literally.
    Any,
    /// `MATCH`: the filter's name is a resource name; patterns that apply to it match.
    Match,
    /// `LITERAL` patterns only.
    Literal,
    /// `PREFIXED` patterns only.
    Prefixed,
}

/// Kafka `AclBindingFilter` (`ResourcePatternFilter` + `AccessControlEntryFilter`);
/// `None` = ANY.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct AclBindingFilter {
    /// Resource type.
    pub resource_type: Option<AclResourceType>,
    /// Resource name.
    pub name: Option<String>,
    /// How the name is compared.
    pub pattern_type: PatternTypeFilter,
    /// Principal.
    pub principal: Option<String>,
    /// Host.
    pub host: Option<String>,
    /// Operation.
    pub operation: Option<AclOperation>,
    /// Permission type.
    pub permission_type: Option<AclPermissionType>,
}

impl AclBindingFilter {
    /// Kafka `AclBindingFilter.ANY`: matches every binding.
    #[must_use]
    pub fn any() -> Self {
        Self {
            resource_type: None,
            name: None,
            pattern_type: PatternTypeFilter::Any,
            principal: None,
            host: None,
            operation: None,
            permission_type: None,
        }
    }

    /// The filter that matches exactly `binding` (Kafka `AclBinding.toFilter`).
    #[must_use]
    pub fn exact(binding: &AclBinding) -> Self {
        Self {
            resource_type: Some(binding.pattern.resource_type),
            name: Some(binding.pattern.name.clone()),
            pattern_type: match binding.pattern.pattern_type {
                PatternType::Literal => PatternTypeFilter::Literal,
                PatternType::Prefixed => PatternTypeFilter::Prefixed,
            },
            principal: Some(binding.entry.principal.clone()),
            host: Some(binding.entry.host.clone()),
            operation: Some(binding.entry.operation),
            permission_type: Some(binding.entry.permission_type),
        }
    }

    /// Kafka `AclBindingFilter.matches`: the pattern part
    /// (`ResourcePatternFilter.matches`) and the entry part (`AccessControlEntryFilter.matches`).
    #[must_use]
    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.matches_pattern(&binding.pattern) && self.matches_entry(&binding.entry)
    }

    fn matches_pattern(&self, p: &ResourcePattern) -> bool {
        if self.resource_type.is_some_and(|t| t != p.resource_type) {
            return false;
        }
        let same_type = matches!(
            (self.pattern_type, p.pattern_type),
            (PatternTypeFilter::Literal, PatternType::Literal)
                | (PatternTypeFilter::Prefixed, PatternType::Prefixed)
        );
        let typed = matches!(
            self.pattern_type,
            PatternTypeFilter::Literal | PatternTypeFilter::Prefixed
        );
        if typed && !same_type {
            return false;
        }
        let Some(name) = &self.name else {
            return true;
        };
        if self.pattern_type == PatternTypeFilter::Any || same_type {
            return *name == p.name;
        }
        // MATCH: the patterns that apply to the resource `name`.
        p.applies_to(p.resource_type, name)
    }

    fn matches_entry(&self, e: &AccessControlEntry) -> bool {
        self.principal.as_ref().is_none_or(|x| *x == e.principal)
            && self.host.as_ref().is_none_or(|x| *x == e.host)
            && self.operation.is_none_or(|x| x == e.operation)
            && self.permission_type.is_none_or(|x| x == e.permission_type)
    }
}

/// The id of an ACL in the metadata log (Kafka: the `Uuid` of `AccessControlEntryRecord`).
/// The controller makes it deterministically (see `Controller::new_acl_id`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AclId(pub u128);

impl fmt::Display for AclId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// One filter's outcome in a `DeleteAcls` response (Kafka `DeleteAclsFilterResult`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteAclsFilterResult {
    /// Filter-level error.
    pub error: crate::protocol::ErrorCode,
    /// Why, for an error.
    pub message: Option<String>,
    /// The ACLs the filter matched and removed, sorted.
    pub matching: Vec<AclBinding>,
}
