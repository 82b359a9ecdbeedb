//! `smpsim calibrate`: measure this host's costs, with repetitions, into a
//! machine profile (the machine TOML format, every number with its median,
//! spread and method as its source).
//!
//! [`measure`] times each cost, [`derive`] checks the figures and turns
//! them into the profile's costs, and [`calibrate`] runs both on the first
//! two CPUs this process may use and renders the profile.

pub mod contention;
mod derive;
mod measure;

pub use derive::{
    check_cross, check_ipi, check_line, check_switch, check_syscall, derive, fallback_preset,
    Derived, Raw,
};
use measure::{
    ipi_round_trip, line_transfer, ping_pong_cross, ping_pong_same_cpu, relation, MIN_IPIS_PER_CALL,
};
pub use measure::{ipi_round_trip_verified, syscall, Measurement};

use crate::sys;

/// The profile text: every cost with its source; an unmeasured one also
/// with a comment line saying so.
pub fn render(name: &str, cpus: usize, costs: &[Derived]) -> String {
    let mut t = String::new();
    t.push_str(&format!("# Machine profile written by `smpsim calibrate` on this host.\nname = {name:?}\ndescription = \"calibrated host, {cpus} CPUs\"\n\n"));
    t.push_str(&format!("[topology]\nsockets = 1\nnuma_nodes_per_socket = 1\nllcs_per_node = 1\ncores_per_llc = {cpus}\nthreads_per_core = 1\n\n"));
    for d in costs {
        if let Some(why) = &d.unmeasured {
            t.push_str(&format!("# UNMEASURED: {}\n", why.replace('\n', " ")));
        }
        t.push_str(&format!(
            "[costs.{}]\nns = {:.0}\nsource = {:?}\n",
            d.field, d.ns, d.source
        ));
    }
    t
}

/// The result: the measurements, the costs and the profile text.
pub struct Calibration {
    pub measurements: Vec<Measurement>,
    pub costs: Vec<Derived>,
    /// What the calibration refused or could not do, and why, in order.
    pub notes: Vec<String>,
    pub profile: String,
}

impl Calibration {
    /// The costs that keep a preset's value, with the reason.
    pub fn unmeasured(&self) -> impl Iterator<Item = (&str, &str)> {
        self.costs
            .iter()
            .filter_map(|d| Some((d.field.as_str(), d.unmeasured.as_deref()?)))
    }
}

/// Measures the IPI round trip the first way and, where that one was
/// blind (no IPI per call, or a figure no IPI could have), the second.
fn measure_ipi(
    a: u32,
    b: u32,
    sc: f64,
    line: f64,
    ms: &mut Vec<Measurement>,
    notes: &mut Vec<String>,
) -> Result<Measurement, String> {
    let first = match ipi_round_trip(a, b) {
        Err(e) => return Err(e),
        Ok((m, per_call)) => {
            ms.push(m.clone());
            let refused = match per_call {
                Some(p) if p < MIN_IPIS_PER_CALL => Err(format!(
                    "CPU {b} received {p:.2} function-call IPIs per call (/proc/interrupts CAL): the task it ran was mostly not of this mm"
                )),
                _ => check_ipi(m.median_ns, sc, line),
            };
            match refused {
                Ok(()) => return Ok(m),
                Err(why) => why,
            }
        }
    };
    notes.push(format!(
        "ipi_round_trip refused ({first}); measuring it again with a verified sibling on CPU {b}"
    ));
    let second = ipi_round_trip_verified(a, b).and_then(|m| {
        ms.push(m.clone());
        check_ipi(m.median_ns, sc, line)?;
        Ok(m)
    });
    second.map_err(|e| format!("first way: {first}; second way: {e}"))
}

pub fn calibrate(name: &str) -> Result<Calibration, String> {
    // A CPU a killed hotplug run left offline would be missing here.
    crate::cleanup::restore_and_report();
    let cpus = sys::online_cpus();
    if cpus.len() < 2 {
        return Err("calibrate needs at least 2 online CPUs (an IPI and a cache-line transfer need two); bring one online or run on a bigger machine".into());
    }
    let preset = smpsim_machine::preset(fallback_preset())
        .expect("the fallback preset exists")
        .map_err(|e| format!("{e:?}"))?;
    // Put the caller's CPUs back afterwards: the measurements pin it.
    let allowed = sys::allowed_cpus();
    let (a, b) = (cpus[0], cpus[1]);
    let line = line_transfer(a, b);
    let sc = syscall();
    let mut ms = vec![line.clone(), sc.clone()];
    let mut notes = Vec::new();
    let ipi = measure_ipi(a, b, sc.median_ns, line.median_ns, &mut ms, &mut notes);
    let pp = ping_pong_same_cpu(a);
    let cross = ping_pong_cross(a, b);
    let _ = sys::set_allowed(&allowed);
    ms.extend([pp.clone(), cross.clone()]);
    let raw = Raw {
        cpus: (a, b),
        relation: relation(a, b),
        line,
        syscall: sc,
        ipi,
        same_cpu: pp,
        cross_cpu: cross,
    };
    let costs = derive(&raw, &preset);
    Ok(Calibration {
        measurements: ms,
        profile: render(name, cpus.len(), &costs),
        costs,
        notes,
    })
}

#[cfg(test)]
mod sanity_tests {
    use super::*;

    fn m(name: &str, ns: f64) -> Measurement {
        Measurement::from(name, vec![ns; 5], "fabricated")
    }

    /// The figures of the 2-vCPU VM where the first way was blind: the IPI
    /// round trip at the syscall's cost.
    fn blind() -> Raw {
        Raw {
            cpus: (0, 1),
            relation: "same_llc",
            line: m("line_transfer", 98.0),
            syscall: m("syscall", 129.0),
            ipi: Ok(m("ipi_round_trip", 128.0)),
            same_cpu: m("pipe_round_trip_same_cpu", 1_800.0),
            cross_cpu: m("pipe_round_trip_cross_cpu", 56_000.0),
        }
    }

    fn preset() -> smpsim_machine::Machine {
        smpsim_machine::preset(fallback_preset()).unwrap().unwrap()
    }

    fn cost<'a>(d: &'a [Derived], f: &str) -> &'a Derived {
        d.iter().find(|c| c.field == f).unwrap()
    }

    #[test]
    fn an_ipi_at_syscall_cost_is_refused_and_the_preset_kept() {
        let p = preset();
        let d = derive(&blind(), &p);
        for (f, want) in [
            ("ipi_send", &p.costs.ipi_send),
            ("ipi_latency", &p.costs.ipi_latency),
            ("irq_entry_exit", &p.costs.irq_entry_exit),
        ] {
            let c = cost(&d, f);
            assert_eq!(c.ns, want.ns, "{f} keeps the preset's value, not a clamp");
            assert!(c.source.starts_with("unmeasured: "), "{}", c.source);
            assert!(c.source.contains(&want.source), "{}", c.source);
            assert!(c.unmeasured.as_ref().unwrap().contains("no IPI was sent"));
        }
        // The rest still measured; idle_exit says whose ipi_latency it used.
        assert!(cost(&d, "syscall").unmeasured.is_none());
        let idle = cost(&d, "idle_exit");
        assert!(idle.unmeasured.is_none());
        assert!(idle.source.contains("the ipi_latency of preset"));
        assert_eq!(idle.ns, (56_000.0 - 1_800.0) / 2.0 - p.costs.ipi_latency.ns);
        // The written profile says it and still parses as a machine.
        let text = render("t", 2, &d);
        assert!(text.contains("# UNMEASURED: IPI round trip: an IPI round trip of 128 ns"));
        let back: smpsim_machine::Machine = toml::from_str(&text).unwrap();
        assert_eq!(back.costs.ipi_latency.ns, p.costs.ipi_latency.ns);
    }

    #[test]
    fn a_real_ipi_is_split_beyond_the_syscall() {
        let mut raw = blind();
        raw.ipi = Ok(m("ipi_round_trip_verified", 20_129.0));
        let d = derive(&raw, &preset());
        assert_eq!(cost(&d, "ipi_latency").ns, 12_000.0);
        assert_eq!(cost(&d, "ipi_send").ns, 2_000.0);
        assert!(d.iter().all(|c| c.unmeasured.is_none()), "{d:?}");
        assert_eq!(
            cost(&d, "idle_exit").ns,
            (56_000.0 - 1_800.0) / 2.0 - 12_000.0
        );
    }

    #[test]
    fn each_law_refuses_its_impossible_figure() {
        assert!(check_ipi(300.0, 129.0, 98.0).is_err());
        assert!(check_ipi(400.0, 129.0, 98.0).is_ok());
        assert!(check_cross(1_000.0, 1_800.0).is_err());
        assert!(
            check_switch(600.0, 129.0).is_err(),
            "switch cheaper than a syscall"
        );
        assert!(check_line(0.5).is_err() && check_line(50_000.0).is_err());
        assert!(check_syscall(1.0).is_err());

        let p = preset();
        let mut raw = blind();
        raw.cross_cpu = m("pipe_round_trip_cross_cpu", 1_000.0);
        raw.same_cpu = m("pipe_round_trip_same_cpu", 600.0);
        let d = derive(&raw, &p);
        assert_eq!(cost(&d, "context_switch").ns, p.costs.context_switch.ns);
        assert!(cost(&d, "context_switch").unmeasured.is_some());
        assert!(cost(&d, "idle_exit").unmeasured.is_some());
        assert_eq!(cost(&d, "idle_exit").ns, 0.0);

        let mut raw = blind();
        raw.line = m("line_transfer", 0.3);
        let d = derive(&raw, &p);
        let same_llc = cost(&d, "line_transfer.same_llc");
        assert_eq!(same_llc.ns, p.costs.line_transfer.same_llc.ns);
        assert!(same_llc.source.starts_with("unmeasured"));
    }

    #[test]
    fn a_missing_feature_is_named_in_the_profile() {
        let mut raw = blind();
        raw.ipi = Err("MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ failed (EINVAL): targeted membarrier needs Linux >= 5.10".into());
        let d = derive(&raw, &preset());
        assert!(cost(&d, "ipi_latency")
            .source
            .contains("needs Linux >= 5.10"));
    }
}
