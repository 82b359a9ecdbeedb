//! `smpsim host compare`: the arguments handed to
//! [`smpsim_runner::host_compare`].

use super::stopped_status;
use crate::cli::{Format, HostCompareArgs};
use crate::output::{emit, fail};
use smpsim_runner::host_compare::{Compare, Compared};

pub(super) fn compare(a: HostCompareArgs) -> i32 {
    let req = Compare {
        test: a.test,
        profile: a.profile,
        profile_out: a.profile_out,
        seconds: a.seconds,
        json: a.format == Format::Json,
    };
    match smpsim_runner::host_compare::compare(&req) {
        Ok(Compared::Done { out, stopped_early }) => match emit(&out, None) {
            Ok(()) if stopped_early => stopped_status(),
            Ok(()) => 0,
            Err(e) => fail(format!("error: {e}")),
        },
        Ok(Compared::Interrupted) => {
            eprintln!("compare: interrupted");
            stopped_status()
        }
        Err(e) => fail(e),
    }
}
