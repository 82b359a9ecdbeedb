//! Running simulations for the commands: the job pool ([`pool`]), the
//! pilot cost model that prices each run ([`pilot`]), and the progress
//! shown on stderr while they run ([`progress`]), schedule exploration
//! and shrinking ([`explore`]), and writing results atomically ([`output`]);
//! the commands whose logic lives here: `run` ([`run`], over seeds in
//! [`seeds`], over schedules in [`schedules`]), `sweep` ([`sweep`], its points in
//! [`sweep_points`], `sweep merge` in [`sweep_merge`]), `reproduce`
//! ([`reproduce`]), `host compare` ([`host_compare`]), `fmt` ([`fmt`]),
//! `bench` ([`bench`]).

pub mod band;
pub mod bench;
pub mod explore;
pub mod fmt;
pub mod host_compare;
pub mod output;
pub mod pilot;
pub mod pool;
pub mod progress;
pub mod reproduce;
pub mod run;
pub mod schedules;
pub mod seeds;
pub mod sweep;
pub mod sweep_merge;
pub mod sweep_points;
pub mod trace;
pub mod twin;
pub mod variants;
