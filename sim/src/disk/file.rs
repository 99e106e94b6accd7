//! One simulated file: what the page cache shows now, what is on the platter, and the
//! unflushed operations in between (in issue order, so a crash can keep an ordered prefix).

use rand::{Rng, RngCore};

use super::{CrashPolicy, FileCrash};

/// An operation issued since the last flush. Appends keep their own bytes: a later unflushed
/// truncate may have removed them from the current view, yet a crash can still resurrect a
/// prefix of the ops that includes them.
#[derive(Clone, Debug)]
enum PendingOp {
    Append(Vec<u8>),
    Truncate(usize),
}

/// File state. The durable image is `current[..durable_prefix] ++ durable_tail`: in the
/// common append-then-flush case it is a prefix of `current` and costs no extra memory.
#[derive(Clone, Debug, Default)]
pub(super) struct SimFile {
    current: Vec<u8>,
    durable_prefix: usize,
    durable_tail: Vec<u8>,
    pending: Vec<PendingOp>,
}

impl SimFile {
    /// The current view (page cache), including unflushed writes.
    pub(super) fn current(&self) -> &[u8] {
        &self.current
    }

    /// Whether some operation is not yet durable.
    pub(super) fn is_dirty(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Length of the durable image.
    pub(super) fn durable_len(&self) -> usize {
        self.durable_prefix + self.durable_tail.len()
    }

    /// Length of the prefix of the current view that is also durable.
    pub(super) fn flushed_len(&self) -> usize {
        self.durable_prefix
    }

    /// Bit rot: XORs `mask` into the flushed byte at `pos`, in the durable image and the
    /// current view alike. False (nothing changed) when `pos` is not flushed.
    pub(super) fn rot(&mut self, pos: usize, mask: u8) -> bool {
        if pos >= self.durable_prefix || mask == 0 {
            return false;
        }
        self.current[pos] ^= mask;
        true
    }

    pub(super) fn append(&mut self, bytes: &[u8]) {
        self.current.extend_from_slice(bytes);
        self.pending.push(PendingOp::Append(bytes.to_vec()));
    }

    /// Shrinks the file to `len`; like `FileChannel.truncate`, a larger `len` is a no-op.
    pub(super) fn truncate(&mut self, len: usize) {
        if len >= self.current.len() {
            return;
        }
        if len < self.durable_prefix {
            // Durable bytes leave the current view but stay on disk until a flush.
            let mut tail = self.current[len..self.durable_prefix].to_vec();
            tail.append(&mut self.durable_tail);
            self.durable_tail = tail;
            self.durable_prefix = len;
        }
        self.current.truncate(len);
        self.pending.push(PendingOp::Truncate(len));
    }

    /// Makes the current view durable (`fsync`).
    pub(super) fn flush(&mut self) {
        self.durable_prefix = self.current.len();
        self.durable_tail.clear();
        self.pending.clear();
    }

    /// Replaces the whole file durably (write temp, fsync, rename).
    pub(super) fn write_atomic(&mut self, bytes: &[u8]) {
        self.current.clear();
        self.current.extend_from_slice(bytes);
        self.flush();
    }

    /// Applies a crash: the file becomes what survives, and nothing is pending any more.
    pub(super) fn crash(&mut self, policy: CrashPolicy, rng: &mut dyn RngCore) -> FileCrash {
        let len_before = self.current.len() as u64;
        let durable_len = self.durable_len() as u64;
        let pending_bytes: usize = self.pending.iter().map(PendingOp::appended).sum();
        let (survivor, applied_bytes, ops_lost, torn) = match policy {
            CrashPolicy::KeepAll => (None, pending_bytes, 0, false),
            CrashPolicy::LoseAllUnflushed => {
                (Some(self.durable_image()), 0, self.pending.len(), false)
            }
            CrashPolicy::KeepRandomPrefix => self.random_prefix(rng),
        };
        if let Some(image) = survivor {
            self.current = image;
        }
        self.flush();
        FileCrash {
            len_before,
            durable_len,
            len_after: self.current.len() as u64,
            bytes_lost: (pending_bytes - applied_bytes) as u64,
            ops_lost,
            torn,
        }
    }

    fn durable_image(&self) -> Vec<u8> {
        let mut image = self.current[..self.durable_prefix].to_vec();
        image.extend_from_slice(&self.durable_tail);
        image
    }

    /// Ordered write-back cut at a random point: the first `k` pending ops survive whole, and
    /// if op `k` is an append a random strict prefix of it survives (a torn write when
    /// non-empty). Returns (image, appended bytes that survived, ops lost, torn).
    fn random_prefix(&self, rng: &mut dyn RngCore) -> (Option<Vec<u8>>, usize, usize, bool) {
        let n = self.pending.len();
        if n == 0 {
            return (None, 0, 0, false);
        }
        let k = rng.gen_range(0..=n);
        let mut image = self.durable_image();
        let mut applied = 0;
        for op in &self.pending[..k] {
            applied += op.apply(&mut image);
        }
        let mut torn = false;
        if let Some(PendingOp::Append(bytes)) = self.pending.get(k) {
            let cut = rng.gen_range(0..bytes.len().max(1)).min(bytes.len());
            image.extend_from_slice(&bytes[..cut]);
            applied += cut;
            torn = cut > 0;
        }
        (Some(image), applied, n - k, torn)
    }
}

impl PendingOp {
    fn appended(&self) -> usize {
        match self {
            PendingOp::Append(b) => b.len(),
            PendingOp::Truncate(_) => 0,
        }
    }

    /// Applies the op to an image; returns the appended byte count.
    fn apply(&self, image: &mut Vec<u8>) -> usize {
        match self {
            PendingOp::Append(b) => {
                image.extend_from_slice(b);
                b.len()
            }
            PendingOp::Truncate(len) => {
                image.truncate(*len);
                0
            }
        }
    }
}
