//! The process's memory, from `/proc` (Linux): the resident set now (`/proc/self/statm`, for
//! checking that a sweep's memory stays flat) and its peak (`VmHWM` in `/proc/self/status`,
//! printed by `bench` and the sweep summary). `None` where `/proc` is not available.

/// Resident memory now, in bytes: `statm`'s second field (pages) times the page size.
#[must_use]
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size()?)
}

/// Peak resident memory of the process so far (`VmHWM`), in MiB.
#[must_use]
pub fn peak_resident_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Resets the peak resident memory (`VmHWM`) to the current resident size, so that the next
/// [`peak_resident_mib`] is the peak since now (`bench` reports each scale's own peak). Writes
/// `5` to `/proc/self/clear_refs` (Linux 4.0+); where that is refused the peak stays the
/// process's, which is only ever higher.
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The page size, from the auxiliary vector the kernel gave the process (`AT_PAGESZ`), so
/// no libc call is needed: pairs of native-endian words, key 6 is the page size.
fn page_size() -> Option<u64> {
    const AT_PAGESZ: u64 = 6;
    let auxv = std::fs::read("/proc/self/auxv").ok()?;
    let word = std::mem::size_of::<usize>();
    auxv.chunks_exact(2 * word).find_map(|pair| {
        let read = |b: &[u8]| -> u64 {
            let mut buf = [0u8; 8];
            buf[..word].copy_from_slice(b);
            if cfg!(target_endian = "big") {
                u64::from_be_bytes(buf) >> (8 * (8 - word))
            } else {
                u64::from_le_bytes(buf)
            }
        };
        (read(&pair[..word]) == AT_PAGESZ).then(|| read(&pair[word..]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_readings_are_plausible() {
        // Goal: on Linux the page size is a power of two of at least 4 KiB, the resident set
        // is non-empty and the peak is at least the current resident set.
        if !std::path::Path::new("/proc/self/statm").exists() {
            return;
        }
        let page = page_size().unwrap();
        assert!(page >= 4096 && page.is_power_of_two(), "{page}");
        let rss = resident_bytes().unwrap();
        assert!(rss > 0);
        let peak = peak_resident_mib().unwrap();
        // Both read at slightly different moments; the peak never goes down.
        assert!(
            peak * 1024.0 * 1024.0 >= rss as f64 * 0.9,
            "{peak} MiB vs {rss} B"
        );
    }
}
