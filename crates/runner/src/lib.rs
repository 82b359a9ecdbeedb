//! Running simulations for the commands: the job pool ([`pool`]), the
//! pilot cost model that prices each run ([`pilot`]), and the progress
//! shown on stderr while they run ([`progress`]), schedule exploration
//! and shrinking ([`explore`]), and writing results atomically ([`output`]).

pub mod band;
pub mod explore;
pub mod output;
pub mod pilot;
pub mod pool;
pub mod progress;
pub mod trace;
pub mod twin;
