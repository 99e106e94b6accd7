//! The chaos engine: a seed draws a world, a workload and a fault schedule ([`plan`]); a run
//! plays it with the checker watching every event, heals, and requires convergence
//! ([`run`]).

pub mod plan;
pub mod run;

pub use plan::{ChaosFault, ChaosPlan, ClientPlan, CrashMode, FaultStep};
pub use run::{ChaosOptions, ChaosOutcome, Verdict, run_chaos_seed, run_plan};
