//! Seed ranges and shards from the command line (`100..200`, `7`, `--shard 2/8`).

use std::ops::Range;

/// A bad `--seeds` or `--shard` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeedArgError {
    /// Not `A..B` or a number.
    #[error("--seeds: expected `A..B` or a number, got `{0}`")]
    Malformed(String),
    /// `B <= A`.
    #[error("--seeds: empty range `{0}`")]
    Empty(String),
    /// Not `i/n` with `i < n`.
    #[error("--shard: expected `i/n` with 0 <= i < n, got `{0}`")]
    Shard(String),
}

/// Parses `A..B` (end exclusive), `A..=B` or a single seed.
pub fn parse_seeds(s: &str) -> Result<Range<u64>, SeedArgError> {
    let bad = || SeedArgError::Malformed(s.to_string());
    if let Some((a, b)) = s.split_once("..=") {
        let a: u64 = a.trim().parse().map_err(|_| bad())?;
        let b: u64 = b.trim().parse().map_err(|_| bad())?;
        if b < a {
            return Err(SeedArgError::Empty(s.to_string()));
        }
        return Ok(a..b + 1);
    }
    if let Some((a, b)) = s.split_once("..") {
        let a: u64 = a.trim().parse().map_err(|_| bad())?;
        let b: u64 = b.trim().parse().map_err(|_| bad())?;
        if b <= a {
            return Err(SeedArgError::Empty(s.to_string()));
        }
        return Ok(a..b);
    }
    let a: u64 = s.trim().parse().map_err(|_| bad())?;
    Ok(a..a + 1)
}

/// Parses `i/n`.
pub fn parse_shard(s: &str) -> Result<(u64, u64), SeedArgError> {
    let bad = || SeedArgError::Shard(s.to_string());
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let i: u64 = i.trim().parse().map_err(|_| bad())?;
    let n: u64 = n.trim().parse().map_err(|_| bad())?;
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// The seeds of `range` that belong to shard `i` of `n` (seed % n == i): deterministic, so
/// the shards of a sweep partition it exactly.
#[must_use]
pub fn shard_seeds(range: Range<u64>, shard: Option<(u64, u64)>) -> Vec<u64> {
    range
        .filter(|s| shard.is_none_or(|(i, n)| s % n == i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_ranges_and_shards_parse() {
        assert_eq!(parse_seeds("3..7"), Ok(3..7));
        assert_eq!(parse_seeds("3..=7"), Ok(3..8));
        assert_eq!(parse_seeds("9"), Ok(9..10));
        assert!(matches!(parse_seeds("7..3"), Err(SeedArgError::Empty(_))));
        assert!(matches!(parse_seeds("x"), Err(SeedArgError::Malformed(_))));
        assert_eq!(parse_shard("1/4"), Ok((1, 4)));
        assert!(parse_shard("4/4").is_err());
        let all: Vec<u64> = (0..4)
            .flat_map(|i| shard_seeds(0..10, Some((i, 4))))
            .collect();
        let mut sorted = all.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..10).collect::<Vec<_>>(),
            "shards partition the range"
        );
    }
}
