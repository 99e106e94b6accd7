//! `SimDisk`: one broker's durable storage, with fsync semantics we control.
//!
//! madsim's `fs` keeps unsynced bytes across a kill (toolchain.md), so it cannot show the
//! crash behaviours Kafka's recovery exists for. Here each file has a current view (what
//! reads see) and a durable image (what an fsync made permanent); a [`SimDisk::crash`]
//! keeps the durable image plus, per [`CrashPolicy`], some or all of the unflushed
//! operations, possibly tearing the last append mid-batch. Flushed bytes can rot
//! ([`SimDisk::rot`]): a bit flips on the platter, silently, and only a CRC check finds it.
//! Recovery (CRC validation, truncating a torn tail or a rotted batch) is the broker's job, as
//! in Kafka's log loader.
//!
//! The disk is plain synchronous data: the node driver submits the core's `Io` commands and
//! reports completions, and tests drive it with a seeded `StdRng`.

mod file;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use bytes::Bytes;
use rand::RngCore;

use file::SimFile;

/// A failed disk operation. Nothing was applied when one is returned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DiskError {
    /// The disk is full (`ENOSPC`): a fault knob or the capacity was reached.
    #[error("no space left on device writing {path} ({needed} bytes needed, {free} free)")]
    NoSpace {
        /// The file written.
        path: String,
        /// Bytes the write needed.
        needed: u64,
        /// Bytes free (0 when the disk was forced full).
        free: u64,
    },
    /// An injected I/O error (`EIO`); Kafka takes the log dir offline on these.
    #[error("I/O error on {path}")]
    Io {
        /// The file operated on.
        path: String,
    },
    /// The file does not exist.
    #[error("no such file {path}")]
    NotFound {
        /// The missing file.
        path: String,
    },
}

/// What survives of unflushed operations when a node crashes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CrashPolicy {
    /// Power loss with nothing written back: only flushed data survives.
    LoseAllUnflushed,
    /// Power loss mid write-back: an ordered random prefix of each file's unflushed
    /// operations survives, the last append possibly torn.
    KeepRandomPrefix,
    /// Process crash with the OS page cache intact: everything written survives.
    KeepAll,
}

/// What a crash did to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileCrash {
    /// Length of the current view just before the crash.
    pub len_before: u64,
    /// Length of the flushed (durable) image just before the crash.
    pub durable_len: u64,
    /// Length after the crash.
    pub len_after: u64,
    /// Appended bytes that did not survive.
    pub bytes_lost: u64,
    /// Unflushed operations that did not survive whole.
    pub ops_lost: usize,
    /// Whether a strict, non-empty prefix of an append survived (a torn write).
    pub torn: bool,
}

/// Per-file outcome of a crash, for files that had unflushed operations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Keyed by path.
    pub files: BTreeMap<String, FileCrash>,
}

impl CrashReport {
    /// Total appended bytes lost across files.
    #[must_use]
    pub fn bytes_lost(&self) -> u64 {
        self.files.values().map(|f| f.bytes_lost).sum()
    }

    /// Whether any file was left with a torn append.
    #[must_use]
    pub fn any_torn(&self) -> bool {
        self.files.values().any(|f| f.torn)
    }
}

/// Counters for run summaries and the benchmark.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Bytes accepted by `append` and `write_atomic`.
    pub bytes_written: u64,
    /// Successful `flush` calls.
    pub flushes: u64,
    /// Successful `write_atomic` calls.
    pub atomic_writes: u64,
    /// Operations that failed with [`DiskError::NoSpace`] or [`DiskError::Io`].
    pub failed_ops: u64,
    /// Crashes applied.
    pub crashes: u64,
    /// Appended bytes lost in crashes.
    pub bytes_lost: u64,
    /// Flushed bytes that rotted.
    pub rotted_bytes: u64,
}

/// One broker's disk: files by path (`"orders-0/00000000000000000000.log"`,
/// `"replication-offset-checkpoint"`), in a `BTreeMap` so listings are deterministic.
#[derive(Clone, Debug, Default)]
pub struct SimDisk {
    files: BTreeMap<String, SimFile>,
    capacity_bytes: Option<u64>,
    forced_full: bool,
    io_faults: Vec<String>,
    stats: DiskStats,
}

impl SimDisk {
    /// An empty disk of unlimited capacity.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty disk that fails writes with `NoSpace` beyond `capacity_bytes` of file data.
    #[must_use]
    pub fn with_capacity(capacity_bytes: u64) -> Self {
        Self {
            capacity_bytes: Some(capacity_bytes),
            ..Self::default()
        }
    }

    /// Appends to `path`, creating it if needed (the file's existence is durable at once;
    /// its bytes only after a flush).
    pub fn append(&mut self, path: &str, bytes: &[u8]) -> Result<(), DiskError> {
        self.check_io(path)?;
        // An append grows the file by exactly its bytes: the file's length is not needed.
        self.check_space(path, bytes.len() as u64)?;
        // An existing file (nearly every append) is found without building an owned key.
        match self.files.get_mut(path) {
            Some(f) => f.append(bytes),
            None => self.files.entry(path.to_owned()).or_default().append(bytes),
        }
        self.stats.bytes_written += bytes.len() as u64;
        Ok(())
    }

    /// Replaces `path` atomically and durably, as Kafka's checkpoint files do (write a temp
    /// file, fsync, rename): after a crash the file holds either the old or the new content,
    /// and after `Ok` always the new.
    pub fn write_atomic(&mut self, path: &str, bytes: &[u8]) -> Result<(), DiskError> {
        let old_len = self.files.get(path).map_or(0, |f| f.current().len());
        self.check_io(path)?;
        self.check_space(path, bytes.len().saturating_sub(old_len) as u64)?;
        self.files
            .entry(path.to_owned())
            .or_default()
            .write_atomic(bytes);
        self.stats.bytes_written += bytes.len() as u64;
        self.stats.atomic_writes += 1;
        Ok(())
    }

    /// Shrinks `path` to `len` bytes (a no-op when `len` is not smaller). Not durable until
    /// flushed: a crash may bring truncated bytes back, as on a real file system.
    pub fn truncate(&mut self, path: &str, len: u64) -> Result<(), DiskError> {
        self.check_exists(path)?;
        self.check_io(path)?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        self.file_mut(path).truncate(len);
        Ok(())
    }

    /// Makes every operation issued on `path` so far durable (`fsync`).
    pub fn flush(&mut self, path: &str) -> Result<(), DiskError> {
        self.check_exists(path)?;
        self.check_io(path)?;
        self.file_mut(path).flush();
        self.stats.flushes += 1;
        Ok(())
    }

    /// Flushes every dirty file, in path order; stops at the first error.
    pub fn flush_all(&mut self) -> Result<(), DiskError> {
        let dirty: Vec<String> = self
            .files
            .iter()
            .filter(|(_, f)| f.is_dirty())
            .map(|(p, _)| p.clone())
            .collect();
        dirty.iter().try_for_each(|p| self.flush(p))
    }

    /// Removes `path`, durably (Kafka deletes whole segments; a half-deleted file is not a
    /// state its recovery reasons about).
    pub fn delete(&mut self, path: &str) -> Result<(), DiskError> {
        self.check_exists(path)?;
        self.check_io(path)?;
        self.files.remove(path);
        Ok(())
    }

    /// The current content of `path`, unflushed writes included.
    #[must_use]
    pub fn read(&self, path: &str) -> Option<Bytes> {
        self.files
            .get(path)
            .map(|f| Bytes::copy_from_slice(f.current()))
    }

    /// Up to `len` bytes of `path` from `pos` (empty past the end), for fetch-sized reads
    /// without copying the whole file.
    #[must_use]
    pub fn read_at(&self, path: &str, pos: u64, len: u64) -> Option<Bytes> {
        let data = self.files.get(path)?.current();
        let start = usize::try_from(pos).unwrap_or(usize::MAX).min(data.len());
        let end = start.saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
        Some(Bytes::copy_from_slice(&data[start..end.min(data.len())]))
    }

    /// Current length of `path`.
    #[must_use]
    pub fn len(&self, path: &str) -> Option<u64> {
        self.files.get(path).map(|f| f.current().len() as u64)
    }

    /// Length of the flushed image of `path`.
    #[must_use]
    pub fn durable_len(&self, path: &str) -> Option<u64> {
        self.files.get(path).map(|f| f.durable_len() as u64)
    }

    /// Length of the prefix of `path` that is flushed (what bit rot can reach).
    #[must_use]
    pub fn flushed_len(&self, path: &str) -> Option<u64> {
        self.files.get(path).map(|f| f.flushed_len() as u64)
    }

    /// Fault knob: latent corruption of flushed data. XORs `mask` into the byte at `pos` of
    /// `path`, which must lie in its flushed prefix; reads and the durable image both see it
    /// (the model has no page cache to hide it). No I/O fault is raised: the rot is silent.
    /// Returns false, changing nothing, when `pos` is not flushed or `mask` is 0.
    pub fn rot(&mut self, path: &str, pos: u64, mask: u8) -> bool {
        let Some(f) = self.files.get_mut(path) else {
            return false;
        };
        let rotted = usize::try_from(pos).is_ok_and(|p| f.rot(p, mask));
        if rotted {
            self.stats.rotted_bytes += 1;
        }
        rotted
    }

    /// Whether `path` has operations that a crash could lose.
    #[must_use]
    pub fn is_dirty(&self, path: &str) -> bool {
        self.files.get(path).is_some_and(SimFile::is_dirty)
    }

    /// Whether `path` exists.
    #[must_use]
    pub fn exists(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    /// All paths, sorted.
    #[must_use]
    pub fn list(&self) -> Vec<String> {
        self.files.keys().cloned().collect()
    }

    /// Paths starting with `prefix` (a partition directory such as `"orders-0/"`), sorted.
    #[must_use]
    pub fn list_under(&self, prefix: &str) -> Vec<String> {
        self.files
            .range(prefix.to_owned()..)
            .take_while(|(p, _)| p.starts_with(prefix))
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Bytes used by current file contents.
    #[must_use]
    pub fn used_bytes(&self) -> u64 {
        self.files.values().map(|f| f.current().len() as u64).sum()
    }

    /// The configured capacity, if any.
    #[must_use]
    pub fn capacity_bytes(&self) -> Option<u64> {
        self.capacity_bytes
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> DiskStats {
        self.stats
    }

    /// Fault knob: while `full`, every growing write fails with [`DiskError::NoSpace`].
    pub fn set_full(&mut self, full: bool) {
        self.forced_full = full;
    }

    /// Fault knob: the next mutating operation (append, write_atomic, truncate, flush,
    /// delete) on a path starting with `path_prefix` fails with [`DiskError::Io`]. Several
    /// armed faults are consumed in arming order.
    pub fn fail_next_io(&mut self, path_prefix: &str) {
        self.io_faults.push(path_prefix.to_owned());
    }

    /// Crashes the disk: every file with unflushed operations keeps what `policy` lets
    /// survive, drawing from `rng` (only under [`CrashPolicy::KeepRandomPrefix`], in path
    /// order, so a seeded RNG gives the same outcome). Armed faults and the full flag are
    /// hardware state and stay.
    pub fn crash(&mut self, policy: CrashPolicy, rng: &mut impl RngCore) -> CrashReport {
        let mut report = CrashReport::default();
        for (path, file) in &mut self.files {
            if file.is_dirty() {
                report.files.insert(path.clone(), file.crash(policy, rng));
            }
        }
        self.stats.crashes += 1;
        self.stats.bytes_lost += report.bytes_lost();
        report
    }

    fn file_mut(&mut self, path: &str) -> &mut SimFile {
        self.files
            .get_mut(path)
            .expect("disk_file_exists: checked by check_exists")
    }

    fn check_exists(&self, path: &str) -> Result<(), DiskError> {
        if self.files.contains_key(path) {
            Ok(())
        } else {
            Err(DiskError::NotFound {
                path: path.to_owned(),
            })
        }
    }

    fn check_io(&mut self, path: &str) -> Result<(), DiskError> {
        let Some(i) = self
            .io_faults
            .iter()
            .position(|p| path.starts_with(p.as_str()))
        else {
            return Ok(());
        };
        self.io_faults.remove(i);
        self.stats.failed_ops += 1;
        Err(DiskError::Io {
            path: path.to_owned(),
        })
    }

    /// Checks that growing `path` by `growth` bytes fits.
    fn check_space(&mut self, path: &str, growth: u64) -> Result<(), DiskError> {
        if growth == 0 {
            return Ok(());
        }
        let free = match (self.forced_full, self.capacity_bytes) {
            (true, _) => 0,
            (false, None) => return Ok(()),
            (false, Some(cap)) => cap.saturating_sub(self.used_bytes()),
        };
        if growth <= free {
            return Ok(());
        }
        self.stats.failed_ops += 1;
        Err(DiskError::NoSpace {
            path: path.to_owned(),
            needed: growth,
            free,
        })
    }
}
