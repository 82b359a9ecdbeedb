//! `smpsim calibrate --contention`: this host's contended one-line curves
//! and its idle transfers, as rows of `data/contention/curves.csv` and
//! `idle.csv` (docs/contention.md says how a user contributes them).
//!
//! Threads pinned one per CPU (`sched_setaffinity`) hammer one shared cache
//! line with one operation at 1..N threads; each trial is a short burst
//! that every thread starts at the same instant and runs as SCHED_FIFO
//! where allowed, so that other tasks of a loaded machine do not run in
//! it. A trial where a thread was preempted or left its CPU is dropped.
//! The idle transfer of each CPU pair comes from the same run
//! ([`line_transfer_with`]), so the model gets both halves on the same CPUs.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::measure::{line_transfer_with, relation};
use crate::sys;

pub const CURVES_HEADER: &str =
    "machine,source_id,benchmark,threads,value,unit,stat,spread,placement_note";
pub const IDLE_HEADER: &str =
    "machine,source_id,pair_class,value_ns,kind,n_pairs,spread,source_path,topology_note";
/// The `source_id` of every row this module writes.
pub const SOURCE_ID: &str = "smpsim-calibrate";
const UNIT: &str = "ns_per_op_per_thread";

/// The operation every thread repeats on the shared line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bench {
    /// `fetch_add(1)` with its result used: `lock xadd`.
    AtomicAdd,
    /// Load, then `compare_exchange_weak(v, v + 1)` until it succeeds
    /// (`lock cmpxchg`); an operation is a success.
    CasAdd,
    /// `swap()` with its result used: `xchg`.
    Xchg,
}

impl Bench {
    pub const ALL: [Bench; 3] = [Bench::AtomicAdd, Bench::CasAdd, Bench::Xchg];

    /// Its benchmark id in `curves.csv` (the same as concurrency-hierarchy-
    /// bench's where the loop is the same: `atomic_add`, `cas_add`).
    pub fn id(self) -> &'static str {
        match self {
            Bench::AtomicAdd => "atomic_add",
            Bench::CasAdd => "cas_add",
            Bench::Xchg => "xchg",
        }
    }
}

/// One row of `curves.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct CurveRow {
    pub machine: String,
    pub source_id: String,
    pub benchmark: String,
    pub threads: u32,
    /// ns per operation of one thread (`ns_per_op_per_thread`).
    pub value: f64,
    pub unit: String,
    pub stat: String,
    pub spread: String,
    pub placement_note: String,
}

/// One row of `idle.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct IdleRow {
    pub machine: String,
    pub source_id: String,
    pub pair_class: String,
    pub value_ns: f64,
    pub kind: String,
    /// Pairs in the class; none where the source gives one figure.
    pub n_pairs: Option<usize>,
    pub spread: String,
    pub source_path: String,
    pub topology_note: String,
}

/// A field as the CSV files hold it: no line break; quoted where it has a
/// comma or a quote (`idle.csv` quotes some notes; `curves.csv`, which the
/// kernel's test splits on commas, never needs it: [`CurveRow::to_csv`]
/// turns a comma of a note into a semicolon).
fn field(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

/// A figure as written: at most two decimals, no trailing zeros.
fn number(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn spread(p10: f64, p90: f64) -> String {
    format!("p10={} p90={}", number(p10), number(p90))
}

impl CurveRow {
    pub fn to_csv(&self) -> String {
        [
            field(&self.machine),
            field(&self.source_id),
            field(&self.benchmark),
            self.threads.to_string(),
            number(self.value),
            field(&self.unit),
            field(&self.stat),
            field(&self.spread),
            field(&self.placement_note.replace(',', ";")),
        ]
        .join(",")
    }

    pub fn parse(line: &str) -> Result<Self, String> {
        let f = fields(line, 9)?;
        Ok(CurveRow {
            machine: f[0].clone(),
            source_id: f[1].clone(),
            benchmark: f[2].clone(),
            threads: f[3]
                .parse()
                .map_err(|_| format!("column 4 (threads): {:?} is not a count", f[3]))?,
            value: positive(&f[4], 5, "value")?,
            unit: f[5].clone(),
            stat: f[6].clone(),
            spread: f[7].clone(),
            placement_note: f[8].clone(),
        })
    }
}

impl IdleRow {
    pub fn to_csv(&self) -> String {
        [
            field(&self.machine),
            field(&self.source_id),
            field(&self.pair_class),
            number(self.value_ns),
            field(&self.kind),
            self.n_pairs.map_or(String::new(), |n| n.to_string()),
            field(&self.spread),
            field(&self.source_path),
            field(&self.topology_note),
        ]
        .join(",")
    }

    pub fn parse(line: &str) -> Result<Self, String> {
        let f = fields(line, 9)?;
        Ok(IdleRow {
            machine: f[0].clone(),
            source_id: f[1].clone(),
            pair_class: f[2].clone(),
            value_ns: positive(&f[3], 4, "value_ns")?,
            kind: f[4].clone(),
            n_pairs: match f[5].as_str() {
                "" => None,
                n => Some(
                    n.parse()
                        .map_err(|_| format!("column 6 (n_pairs): {n:?} is not a count"))?,
                ),
            },
            spread: f[6].clone(),
            source_path: f[7].clone(),
            topology_note: f[8].clone(),
        })
    }
}

/// Splits one CSV line: fields separated by commas, a field in double
/// quotes may hold commas and doubled quotes.
fn fields(line: &str, n: usize) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut f = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err(format!("column {}: a quote is not closed", out.len() + 1)),
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        f.push('"');
                    }
                    Some('"') => break,
                    Some(c) => f.push(c),
                }
            }
            if !matches!(chars.peek(), None | Some(',')) {
                return Err(format!(
                    "column {}: text after its closing quote",
                    out.len() + 1
                ));
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                f.push(c);
                chars.next();
            }
        }
        out.push(f);
        if chars.next().is_none() {
            break;
        }
    }
    if out.len() != n {
        return Err(format!("{} columns, expected {n}", out.len()));
    }
    Ok(out)
}

fn positive(s: &str, col: usize, name: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!(
            "column {col} ({name}): {s:?} is not a positive number"
        )),
    }
}

/// What `--contention` measured.
#[derive(Clone, Debug, Default)]
pub struct Contention {
    pub curves: Vec<CurveRow>,
    pub idle: Vec<IdleRow>,
    /// What was refused or dropped, and why.
    pub notes: Vec<String>,
}

impl Contention {
    /// The output file: `curves.csv`'s header and rows, a blank line, then
    /// `idle.csv`'s header and rows; each block goes into its file as is.
    pub fn render(&self) -> String {
        let mut t = String::from(CURVES_HEADER);
        t.push('\n');
        for r in &self.curves {
            t += &r.to_csv();
            t.push('\n');
        }
        t.push('\n');
        t += IDLE_HEADER;
        t.push('\n');
        for r in &self.idle {
            t += &r.to_csv();
            t.push('\n');
        }
        t
    }

    /// Reads what [`render`](Self::render) wrote; an error names the line.
    pub fn parse(text: &str) -> Result<(Vec<CurveRow>, Vec<IdleRow>), String> {
        let (mut curves, mut idle) = (Vec::new(), Vec::new());
        let mut block = None;
        for (i, line) in text.lines().enumerate() {
            let at = |e: String| format!("line {}: {e}", i + 1);
            match line {
                "" => continue,
                CURVES_HEADER => block = Some(true),
                IDLE_HEADER => block = Some(false),
                _ => match block {
                    None => return Err(at("a row before any header".into())),
                    Some(true) => curves.push(CurveRow::parse(line).map_err(at)?),
                    Some(false) => idle.push(IdleRow::parse(line).map_err(at)?),
                },
            }
        }
        Ok((curves, idle))
    }
}

/// How long and how often.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// At most this many threads (default: every CPU this process may use).
    pub max_threads: Option<usize>,
    /// Trials per (operation, thread count); the row is their median.
    pub trials: usize,
    /// One trial's length.
    pub burst_ns: u64,
    /// Run the threads as SCHED_FIFO during a burst, where allowed.
    pub fifo: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_threads: None,
            trials: 31,
            burst_ns: 2_000_000,
            fifo: true,
        }
    }
}

/// The thread counts measured on `n` CPUs: each up to 8, then doubling,
/// and `n` itself.
pub fn thread_counts(n: usize) -> Vec<u32> {
    let mut v: Vec<usize> = (1..=n.min(8)).collect();
    let mut k = 16;
    while k < n {
        v.push(k);
        k *= 2;
    }
    if n > 8 {
        v.push(n);
    }
    v.into_iter().map(|x| x as u32).collect()
}

/// Quantile `p` of sorted samples, linear interpolation (as pandas, which
/// `data/contention`'s other spreads follow).
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    let x = (sorted.len() - 1) as f64 * p;
    let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (x - lo as f64)
}

/// The line every thread hits, alone in its 128 bytes (two 64-byte lines:
/// the adjacent-line prefetcher pairs them).
#[repr(align(128))]
struct Line(AtomicU64);

/// One thread's burst.
#[derive(Clone, Copy, Default)]
struct Burst {
    ops: u64,
    attempts: u64,
    ns: u64,
    clean: bool,
}

fn involuntary_switches() -> i64 {
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_nivcsw
}

/// Runs `bench` until `end`; returns (successful operations, and for a
/// CAS loop its attempts, for `xchg` the swaps that found another
/// thread's id: the line's visits).
#[inline(never)]
fn hammer(line: &AtomicU64, bench: Bench, end: u64, tid: u64) -> (u64, u64) {
    const BATCH: u64 = 100;
    let (mut ops, mut attempts, mut sink) = (0u64, 0u64, 0u64);
    while sys::now_ns() < end {
        for _ in 0..BATCH {
            match bench {
                Bench::AtomicAdd => sink = sink.wrapping_add(line.fetch_add(1, Ordering::Relaxed)),
                Bench::Xchg => {
                    // The old value is another thread's id: the line came
                    // from it since this thread's last swap.
                    if line.swap(tid, Ordering::Relaxed) != tid {
                        attempts += 1;
                    }
                }
                Bench::CasAdd => {
                    let mut v = line.load(Ordering::Relaxed);
                    loop {
                        attempts += 1;
                        match line.compare_exchange_weak(
                            v,
                            v.wrapping_add(1),
                            Ordering::SeqCst,
                            Ordering::Relaxed,
                        ) {
                            Ok(_) => break,
                            Err(now) => v = now,
                        }
                    }
                }
            }
        }
        ops += BATCH;
    }
    std::hint::black_box(sink);
    (ops, attempts)
}

/// One operation at `cpus.len()` threads: per trial, ns per operation of
/// one thread (sum of their times / sum of their operations, as
/// concurrency-hierarchy-bench), and CAS attempts per success; trials a
/// thread was not cleanly on its CPU for are dropped. Also whether
/// SCHED_FIFO was granted.
fn trials(cpus: &[u32], bench: Bench, o: &Options) -> Result<(Vec<f64>, Vec<f64>, bool), String> {
    let n = cpus.len();
    let line = Line(AtomicU64::new(0));
    let arrived = AtomicUsize::new(0);
    let generation = AtomicUsize::new(0);
    let start_at = AtomicU64::new(0);
    let abort = AtomicBool::new(false);
    let fifo_refused = AtomicBool::new(false);
    let bursts = Mutex::new(vec![vec![Burst::default(); n]; o.trials]);
    let pin_error = Mutex::new(None);
    std::thread::scope(|s| {
        for (t, &cpu) in cpus.iter().enumerate() {
            let (line, arrived, generation, start_at, abort, fifo_refused, bursts, pin_error) = (
                &line,
                &arrived,
                &generation,
                &start_at,
                &abort,
                &fifo_refused,
                &bursts,
                &pin_error,
            );
            s.spawn(move || {
                if let Err(e) = sys::pin_to(cpu) {
                    *pin_error.lock().unwrap() =
                        Some(format!("pinning a thread to CPU {cpu}: {e}"));
                    abort.store(true, Ordering::Relaxed);
                    return;
                }
                for trial in 0..o.trials {
                    // All threads arrive; the last sets a common start.
                    if arrived.fetch_add(1, Ordering::AcqRel) + 1 == n * (trial + 1) {
                        start_at.store(sys::now_ns() + 200_000, Ordering::Release);
                        generation.store(trial + 1, Ordering::Release);
                    }
                    let waited = sys::now_ns();
                    while generation.load(Ordering::Acquire) != trial + 1 {
                        if abort.load(Ordering::Relaxed) || sys::now_ns() - waited > 2_000_000_000 {
                            abort.store(true, Ordering::Relaxed);
                            return;
                        }
                        std::hint::spin_loop();
                    }
                    let start = start_at.load(Ordering::Acquire);
                    let fifo = o.fifo && sys::set_fifo(1).is_ok();
                    if o.fifo && !fifo {
                        fifo_refused.store(true, Ordering::Relaxed);
                    }
                    let switches = involuntary_switches();
                    while sys::now_ns() < start {
                        std::hint::spin_loop();
                    }
                    let (ops, attempts) = hammer(&line.0, bench, start + o.burst_ns, t as u64);
                    let end = sys::now_ns();
                    let clean =
                        involuntary_switches() == switches && sys::current_cpu() == Some(cpu);
                    if fifo {
                        sys::set_normal();
                    }
                    bursts.lock().unwrap()[trial][t] = Burst {
                        ops,
                        attempts,
                        ns: end - start,
                        clean,
                    };
                    // Give the CPU back between bursts.
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            });
        }
    });
    if let Some(e) = pin_error.into_inner().unwrap() {
        return Err(e);
    }
    if abort.load(Ordering::Relaxed) {
        return Err(format!(
            "{} threads: a thread never reached the start of a trial within 2 s",
            n
        ));
    }
    let (mut per_op, mut per_success) = (Vec::new(), Vec::new());
    for b in bursts.into_inner().unwrap() {
        if b.iter().all(|x| x.clean && x.ops > 0) {
            let ns: u64 = b.iter().map(|x| x.ns).sum();
            let ops: u64 = b.iter().map(|x| x.ops).sum();
            let attempts: u64 = b.iter().map(|x| x.attempts).sum();
            per_op.push(ns as f64 / ops as f64);
            per_success.push(attempts as f64 / ops as f64);
        }
    }
    Ok((per_op, per_success, !fifo_refused.load(Ordering::Relaxed)))
}

/// The idle-transfer pair class of `relation()`'s answer, as `idle.csv`
/// names it.
pub fn pair_class(relation: &str) -> &'static str {
    match relation {
        "smt_sibling" => "smt",
        "same_llc" => "same_llc",
        "cross_socket" => "cross_socket",
        _ => "same_socket",
    }
}

/// Measures this host: `machine` is the id its rows carry.
pub fn measure(machine: &str, o: &Options) -> Result<Contention, String> {
    let mut cpus = sys::allowed_cpus();
    let online = sys::online_cpus();
    cpus.retain(|c| online.contains(c));
    if cpus.is_empty() {
        return Err("no online CPU is allowed to this process".into());
    }
    let n = o.max_threads.unwrap_or(cpus.len()).clamp(1, cpus.len());
    let allowed = sys::allowed_cpus();
    let mut out = Contention::default();
    let result = measure_on(machine, &cpus, n, o, &mut out);
    let _ = sys::set_allowed(&allowed);
    result.map(|()| out)
}

fn measure_on(
    machine: &str,
    cpus: &[u32],
    n: usize,
    o: &Options,
    out: &mut Contention,
) -> Result<(), String> {
    let mut fifo_everywhere = o.fifo;
    for bench in Bench::ALL {
        for k in thread_counts(n) {
            if crate::cleanup::should_stop() {
                return Err("stopped by a signal".into());
            }
            let on = &cpus[..k as usize];
            let (mut per_op, mut per_success, fifo) = trials(on, bench, o)?;
            fifo_everywhere &= fifo;
            if per_op.len() < o.trials.div_ceil(2) {
                return Err(format!(
                    "{} at {k} threads: only {} of {} trials ran with every thread on its CPU and not preempted; run on a quieter machine or as root (SCHED_FIFO)",
                    bench.id(),
                    per_op.len(),
                    o.trials
                ));
            }
            if per_op.len() < o.trials {
                out.notes.push(format!(
                    "{} at {k} threads: {} of {} trials dropped (a thread preempted or off its CPU)",
                    bench.id(),
                    o.trials - per_op.len(),
                    o.trials
                ));
            }
            per_op.sort_by(f64::total_cmp);
            per_success.sort_by(f64::total_cmp);
            let cas = match bench {
                Bench::CasAdd => format!(
                    "; {:.2} cmpxchg attempts per success (median)",
                    quantile(&per_success, 0.5)
                ),
                Bench::Xchg if k > 1 => format!(
                    "; {:.1} swaps per visit of the line to a thread (median; a swap that returns another thread's id starts a visit)",
                    1.0 / quantile(&per_success, 0.5)
                ),
                _ => String::new(),
            };
            out.curves.push(CurveRow {
                machine: machine.into(),
                source_id: SOURCE_ID.into(),
                benchmark: bench.id().into(),
                threads: k,
                value: quantile(&per_op, 0.5),
                unit: UNIT.into(),
                stat: format!("median{}", per_op.len()),
                spread: spread(quantile(&per_op, 0.1), quantile(&per_op, 0.9)),
                placement_note: format!(
                    "pinned one thread per CPU in order (CPUs {}); bursts of {:.1} ms started together{}{cas}",
                    cpu_list(on),
                    o.burst_ns as f64 / 1e6,
                    if fifo { " as SCHED_FIFO" } else { " as SCHED_OTHER (SCHED_FIFO refused)" },
                ),
            });
        }
    }
    if o.fifo && !fifo_everywhere {
        out.notes.push(
            "SCHED_FIFO was refused (not root, or no RT budget): the bursts ran as SCHED_OTHER and a preempted trial was dropped instead".into(),
        );
    }
    out.idle = idle_rows(machine, &cpus[..n], o)?;
    Ok(())
}

fn cpu_list(cpus: &[u32]) -> String {
    cpus.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The idle transfer of every pair of `cpus`, by pair class: the median
/// over the class's pairs of each pair's median, the spread over every
/// repetition of them.
fn idle_rows(machine: &str, cpus: &[u32], o: &Options) -> Result<Vec<IdleRow>, String> {
    let mut classes: Vec<(&'static str, Vec<f64>, Vec<f64>)> = Vec::new();
    let mut fifo_all = o.fifo;
    for (i, &a) in cpus.iter().enumerate() {
        for &b in &cpus[i + 1..] {
            if crate::cleanup::should_stop() {
                return Err("stopped by a signal".into());
            }
            let (samples, fifo) = line_transfer_with(a, b, 15, o.fifo);
            fifo_all &= fifo;
            if samples.is_empty() {
                return Err(format!(
                    "the line ping-pong between CPU {a} and CPU {b} never completed (1 s per run)"
                ));
            }
            let class = pair_class(relation(a, b));
            let mut sorted = samples.clone();
            sorted.sort_by(f64::total_cmp);
            let pair_median = quantile(&sorted, 0.5);
            match classes.iter_mut().find(|c| c.0 == class) {
                Some(c) => {
                    c.1.push(pair_median);
                    c.2.extend(samples);
                }
                None => classes.push((class, vec![pair_median], samples)),
            }
        }
    }
    let how = if fifo_all {
        "SCHED_FIFO"
    } else {
        "SCHED_OTHER"
    };
    Ok(classes
        .into_iter()
        .map(|(class, mut medians, mut all)| {
            medians.sort_by(f64::total_cmp);
            all.sort_by(f64::total_cmp);
            IdleRow {
                machine: machine.into(),
                source_id: SOURCE_ID.into(),
                pair_class: class.into(),
                value_ns: quantile(&medians, 0.5),
                kind: "one_way".into(),
                n_pairs: Some(medians.len()),
                spread: spread(quantile(&all, 0.1), quantile(&all, 0.9)),
                source_path: format!(
                    "smpsim calibrate --contention: line_transfer (compare-and-exchange ping-pong of one line, as the published core-to-core tables; one-way time); 15 runs of 40000 transfers per pair as {how}; spread over every run of the class's pairs"
                ),
                topology_note: format!(
                    "{} CPUs measured (CPUs {}); classes from sysfs topology (thread siblings, package id, L3 shared_cpu_list)",
                    cpus.len(),
                    cpu_list(cpus)
                ),
            }
        })
        .collect())
}

/// Measures and writes the rows to `path` (through the workspace's safe
/// writer: refused before measuring if `path` cannot take them, never a
/// half-written file). Returns the notes.
pub fn measure_to(machine: &str, path: &std::path::Path) -> Result<Contention, String> {
    if machine.is_empty() || machine.contains([',', '\n']) {
        return Err(format!(
            "--name {machine:?}: a machine id for the CSV rows needs no comma or line break"
        ));
    }
    smpsim_files::check_output(path)?;
    let c = measure(machine, &Options::default())?;
    smpsim_files::write_output(path, c.render().as_bytes())?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA_CURVES: &str = include_str!("../../../../data/contention/curves.csv");
    const DATA_IDLE: &str = include_str!("../../../../data/contention/idle.csv");

    fn row() -> CurveRow {
        CurveRow {
            machine: "m".into(),
            source_id: SOURCE_ID.into(),
            benchmark: "atomic_add".into(),
            threads: 2,
            value: 41.25,
            unit: UNIT.into(),
            stat: "median31".into(),
            spread: spread(40.04, 43.0),
            placement_note: "pinned, in order".into(),
        }
    }

    #[test]
    fn a_quoted_field_keeps_its_commas_and_quotes() {
        let line = r#"m,s,smt,8,one_way,1,p10=7 p90=9,a.csv,"2 sockets, 16 CPUs ""as measured""""#;
        let r = IdleRow::parse(line).unwrap();
        assert_eq!(r.topology_note, r#"2 sockets, 16 CPUs "as measured""#);
        assert_eq!(r.to_csv(), line);
        assert!(IdleRow::parse(r#"m,s,smt,8,one_way,1,p,a,"open"#)
            .unwrap_err()
            .contains("not closed"));
    }

    #[test]
    fn headers_are_the_data_files_own() {
        assert_eq!(DATA_CURVES.lines().next(), Some(CURVES_HEADER));
        assert_eq!(DATA_IDLE.lines().next(), Some(IDLE_HEADER));
    }

    #[test]
    fn every_row_of_the_data_files_parses_and_writes_back_the_same() {
        for line in DATA_CURVES.lines().skip(1).filter(|l| !l.is_empty()) {
            let r = CurveRow::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(CurveRow::parse(&r.to_csv()), Ok(r));
        }
        for line in DATA_IDLE.lines().skip(1).filter(|l| !l.is_empty()) {
            let r = IdleRow::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(IdleRow::parse(&r.to_csv()), Ok(r));
        }
    }

    #[test]
    fn a_row_is_written_with_two_decimals_and_no_comma_inside_a_note() {
        let r = row();
        assert_eq!(
            r.to_csv(),
            "m,smpsim-calibrate,atomic_add,2,41.25,ns_per_op_per_thread,median31,p10=40.04 p90=43,pinned; in order"
        );
        let back = CurveRow::parse(&r.to_csv()).unwrap();
        assert_eq!(back.placement_note, "pinned; in order");
        assert_eq!(back.threads, 2);
    }

    #[test]
    fn render_then_parse_gives_the_rows_back() {
        let c = Contention {
            curves: vec![row()],
            idle: vec![IdleRow {
                machine: "m".into(),
                source_id: SOURCE_ID.into(),
                pair_class: "same_llc".into(),
                value_ns: 98.0,
                kind: "one_way".into(),
                n_pairs: Some(1),
                spread: spread(90.0, 110.0),
                source_path: "x".into(),
                topology_note: "y".into(),
            }],
            notes: vec![],
        };
        let (curves, idle) = Contention::parse(&c.render()).unwrap();
        assert_eq!(curves.len(), 1);
        assert_eq!(curves[0].value, 41.25);
        assert_eq!(curves[0].placement_note, "pinned; in order");
        assert_eq!(idle, c.idle);
    }

    #[test]
    fn bad_rows_are_refused_with_their_line_and_column() {
        let text = format!("{CURVES_HEADER}\nm,s,atomic_add,2,-3,u,median,,p\n");
        let e = Contention::parse(&text).unwrap_err();
        assert!(e.starts_with("line 2: column 5 (value)"), "{e}");
        let text = format!("{CURVES_HEADER}\nm,s,atomic_add,two,3,u,median,,p\n");
        assert!(Contention::parse(&text)
            .unwrap_err()
            .contains("column 4 (threads)"));
        let text = format!("{IDLE_HEADER}\nm,s,smt,3\n");
        assert_eq!(
            Contention::parse(&text).unwrap_err(),
            "line 2: 4 columns, expected 9"
        );
        assert!(Contention::parse("a,b\n")
            .unwrap_err()
            .contains("before any header"));
    }

    #[test]
    fn quantiles_interpolate_linearly() {
        let s = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert_eq!(quantile(&s, 0.5), 3.0);
        assert!((quantile(&s, 0.9) - 7.6).abs() < 1e-9);
        assert!((quantile(&s, 0.1) - 1.4).abs() < 1e-9);
        assert_eq!(quantile(&[5.0], 0.9), 5.0);
    }

    #[test]
    fn thread_counts_cover_small_machines_wholly_and_big_ones_by_doubling() {
        assert_eq!(thread_counts(1), vec![1]);
        assert_eq!(thread_counts(2), vec![1, 2]);
        assert_eq!(thread_counts(8), (1..=8).collect::<Vec<_>>());
        assert_eq!(thread_counts(48), vec![1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 48]);
    }

    #[test]
    fn pair_classes_are_the_data_files_names() {
        assert_eq!(pair_class("smt_sibling"), "smt");
        assert_eq!(pair_class("same_node"), "same_socket");
        assert_eq!(pair_class("same_llc"), "same_llc");
        assert_eq!(pair_class("cross_socket"), "cross_socket");
    }
}
