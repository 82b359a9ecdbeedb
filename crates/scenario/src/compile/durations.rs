//! Durations as a scenario writes them (`10us`, `cost.ipi_send`), read
//! with their place in the texts for errors.

use smpsim_engine::Nanos;

use crate::duration::{parse_duration, MachineCosts};
use crate::error::{DResult, Sources};
use crate::raw::S;

/// Where durations are read: the texts for locating errors and the
/// machine's costs for `cost.NAME`.
pub(super) struct Durations<'a> {
    pub srcs: &'a Sources,
    pub costs: &'a MachineCosts,
}

impl Durations<'_> {
    pub fn get(&self, v: &S<String>) -> DResult<Nanos> {
        parse_duration(v.get_ref(), self.costs).map_err(|e| {
            let span = self.srcs.sub_span(&v.span(), v.get_ref(), e.range.clone());
            e.at(span)
        })
    }

    pub fn opt(&self, v: &Option<S<String>>, default: Nanos) -> DResult<Nanos> {
        v.as_ref().map_or(Ok(default), |v| self.get(v))
    }
}
