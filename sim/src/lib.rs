//! `mirror-sim`: the simulated world around `mirror-core`: network, disks, traces, and the
//! guided tour; the world, checkers, scenarios and chaos engine build on them.

#[cfg(not(madsim))]
compile_error!(
    "the `sim` crate must be built with `--cfg madsim` (set in .cargo/config.toml). \
     A RUSTFLAGS/CARGO_ENCODED_RUSTFLAGS env var, or running cargo from outside the repo, silently drops it."
);

pub mod chaos;
pub mod check;
pub mod cli;
pub mod disk;
pub mod faults;
pub mod kafka;
pub mod net;
pub mod report;
pub mod scenario;
pub mod tour;
pub mod trace;
pub mod workload;
pub mod world;
