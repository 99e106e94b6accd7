//! The chaos engine: a seed draws a world, a workload and a fault schedule ([`plan`]); a run
//! plays it with the checker watching every event, heals, and requires convergence
//! ([`run`]).

mod actions;
mod clients;
mod converge;
mod edit;
mod persistent;
pub mod plan;
pub mod run;
pub mod shrink;
pub mod site;
mod story;

pub use plan::{
    ChaosFault, ChaosPlan, ClientPlan, CrashMode, FaultStep, PersistentFault, PersistentKind,
    PlanSize, build_id,
};
pub use run::{
    ChaosOptions, ChaosOutcome, RunLimits, Verdict, run_chaos_seed, run_plan, verdict_kind,
};
pub use site::FailureSite;
