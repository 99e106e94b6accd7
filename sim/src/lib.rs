//! `mirror-sim`: the mirrorsim testbed. Today it hosts the guided tour of the partition
//! model; the simulated world, checkers, scenarios and chaos engine build on it.

#[cfg(not(madsim))]
compile_error!(
    "the `sim` crate must be built with `--cfg madsim` (set in .cargo/config.toml). \
     A RUSTFLAGS/CARGO_ENCODED_RUSTFLAGS env var, or running cargo from outside the repo, silently drops it."
);

pub mod tour;
