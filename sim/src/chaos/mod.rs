//! The chaos engine: a seed draws a world, a workload and a fault schedule ([`plan`]); a run
//! plays it with the checker watching every event, heals, and requires convergence
//! ([`run`]).

mod actions;
mod clients;
mod edit;
pub mod plan;
pub mod run;
pub mod shrink;
mod story;

pub use plan::{ChaosFault, ChaosPlan, ClientPlan, CrashMode, FaultStep, PlanSize, build_id};
pub use run::{ChaosOptions, ChaosOutcome, Verdict, run_chaos_seed, run_plan};
