//! Behaviour-preserving changes stay behaviour-preserving: every shipped
//! scenario, all its variants, shortened, must give the same results (host
//! time aside) as when its snapshot in `tests/golden/` was recorded.
//!
//! A snapshot is a readable summary, one section per variant (counters,
//! histograms' count/p50/p99/max, CPU time, task groups, each lock's
//! lock_stat, mm, RCU, findings, events) ending with a digest of each part
//! of the variant's JSON report, then a `[text report]` section with a
//! digest of each block of the text report, so that nothing the summary
//! leaves out can move unseen and what moved is named. Every line is a
//! record (`lock rq_lock`, `digest json`) and its `metric=value` fields; a
//! failure names each metric that moved, `[section] record: metric
//! recorded -> now`. A change that is meant to move results re-records the
//! snapshots:
//!
//! ```sh
//! SMPSIM_BLESS=1 cargo test -p smpsim --test golden
//! ```
//!
//! and says in its commit why the figures moved.

mod common;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use common::{repo, smpsim};
use serde_json::{Map, Value};

/// Each shipped scenario with the settings that keep it short.
const RUNS: &[(&str, &[&str])] = &[
    ("scenarios/hotplug-smt.toml", &["scenario.duration=3s"]),
    (
        "scenarios/ipi-preempt.toml",
        &[
            "scenario.replicas=2",
            "scenario.duration=400ms",
            "scenario.warmup=100ms",
            "kernel.latency_window=100ms",
        ],
    ),
    (
        "scenarios/lazy-tlb.toml",
        &["scenario.duration=4ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/lock-scaling.toml",
        &[
            "scenario.duration=2ms",
            "scenario.warmup=500us",
            "tasks.locker.count=24",
        ],
    ),
    (
        "scenarios/membarrier-percpu.toml",
        &["scenario.duration=8ms", "scenario.warmup=2ms"],
    ),
    ("scenarios/mm-lifetime.toml", &["scenario.duration=5ms"]),
    ("scenarios/slow-mutex.toml", &["scenario.duration=100ms"]),
    (
        "scenarios/examples/mutex-contention.toml",
        &["scenario.duration=20ms", "scenario.warmup=2ms"],
    ),
    (
        "scenarios/examples/percpu-ref.toml",
        &["scenario.duration=12ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/mmap-lock.toml",
        &["scenario.duration=20ms", "scenario.warmup=2ms"],
    ),
    (
        "scenarios/examples/mprotect-faults.toml",
        &["scenario.duration=20ms", "scenario.warmup=2ms"],
    ),
    (
        "scenarios/examples/hybrid-cpus.toml",
        &["scenario.duration=40ms", "scenario.warmup=4ms"],
    ),
    (
        "scenarios/examples/tlb-broadcast.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/cfs-slack.toml",
        &["scenario.duration=100ms", "scenario.warmup=10ms"],
    ),
    (
        "scenarios/examples/cfs-period-phase.toml",
        &["scenario.duration=100ms", "scenario.warmup=10ms"],
    ),
    (
        "scenarios/examples/sched-hooks.toml",
        &["scenario.duration=20ms", "scenario.warmup=5ms"],
    ),
    (
        "scenarios/examples/sched-hooks-locks.toml",
        &["scenario.duration=10ms", "scenario.warmup=2ms"],
    ),
    (
        "scenarios/examples/wakeup-hook-lock.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/ttwu-rq-lock.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/switch-mm-hook.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/tick-hook-wakeup.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/false-sharing.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/rwsem-layout.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/numa-osq.toml",
        &["scenario.duration=12ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/csd-line.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/cpumask-snapshot.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/rcu-callbacks.toml",
        &["scenario.duration=20ms", "scenario.warmup=2ms"],
    ),
    (
        "scenarios/examples/chain-walk.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/futex-hash.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/lockref-loop.toml",
        &["scenario.duration=4ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/contention/atomic-line.toml",
        &["scenario.duration=300us", "scenario.warmup=50us"],
    ),
    (
        "scenarios/contention/locktorture-cna.toml",
        &["scenario.duration=2ms", "scenario.warmup=200us"],
    ),
    (
        "scenarios/contention/folly-small-locks.toml",
        &["tasks.thread.vars.groups=7"],
    ),
    (
        "scenarios/contention/folly-small-locks-d2191.toml",
        &["tasks.thread.vars.groups=4"],
    ),
    ("scenarios/checks/abba.toml", &[]),
    ("scenarios/checks/race.toml", &[]),
    ("scenarios/checks/membarrier.toml", &[]),
    ("scenarios/checks/irq-lock.toml", &[]),
];

const GOLDEN_DIR: &str = "crates/cli/tests/golden";

/// `scenarios/checks/abba.toml` -> `tests/golden/checks-abba.txt`.
fn snapshot_path(scenario: &str) -> PathBuf {
    let stem = scenario
        .trim_start_matches("scenarios/")
        .trim_end_matches(".toml")
        .replace('/', "-");
    repo(GOLDEN_DIR).join(format!("{stem}.txt"))
}

/// FNV-1a: a stable 64-bit digest (std's hasher may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn run(scenario: &str, sets: &[&str], format: &str) -> Vec<u8> {
    let mut cmd = smpsim();
    cmd.args(["run", repo(scenario).to_str().unwrap(), "--format", format]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().expect("runs");
    assert!(
        out.status.success(),
        "{scenario}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `obj`'s fields by name (whatever order serde_json keeps them in).
fn sorted(obj: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut fields: Vec<_> = obj.iter().collect();
    fields.sort_by_key(|(k, _)| *k);
    fields
}

/// `key=value` for each scalar field of `obj` not in `skip`, by name.
fn fields(obj: &Map<String, Value>, skip: &[&str]) -> String {
    prefixed_fields("", obj, skip)
}

/// `fields`, each name after `prefix` (`total.user=...`).
fn prefixed_fields(prefix: &str, obj: &Map<String, Value>, skip: &[&str]) -> String {
    let mut out = Vec::new();
    for (k, v) in sorted(obj) {
        if skip.contains(&k.as_str()) {
            continue;
        }
        match v {
            Value::Null => out.push(format!("{prefix}{k}=-")),
            Value::String(s) => out.push(format!("{prefix}{k}={s:?}")),
            Value::Bool(_) | Value::Number(_) => out.push(format!("{prefix}{k}={v}")),
            Value::Array(_) | Value::Object(_) => {}
        }
    }
    out.join(" ")
}

/// `key=value` for the named fields of `obj` that it has.
fn some_fields(obj: &Map<String, Value>, keys: &[&str]) -> String {
    keys.iter()
        .filter_map(|k| obj.get(*k).map(|v| format!("{k}={v}")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn name_of(obj: &Map<String, Value>) -> &str {
    ["name", "cgroup", "detector"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .unwrap_or("?")
}

/// The CPUs' time summed, and the worst of their maxima.
fn cpu_totals(cpus: &[Value]) -> String {
    let sum = |k: &str| -> u64 { cpus.iter().filter_map(|c| c[k].as_u64()).sum() };
    let max = |k: &str| -> u64 { cpus.iter().filter_map(|c| c[k].as_u64()).max().unwrap_or(0) };
    let mut out: Vec<String> = ["user", "sys", "spin", "irq", "idle", "nr_switches"]
        .iter()
        .map(|k| format!("{k}={}", sum(k)))
        .collect();
    for k in ["max_preempt_off_ns", "max_irq_off_ns"] {
        out.push(format!("{k}={}", max(k)));
    }
    out.join(" ")
}

/// One variant's section of a snapshot: its summary, then a digest of
/// each part (array or object) of its JSON report, so that nothing the
/// summary leaves out can move unseen, and what moved is named.
fn variant_summary(out: &mut String, var: &Map<String, Value>) {
    let name = var["variant"].as_str().unwrap_or("?");
    let description = var["description"].as_str().unwrap_or("");
    writeln!(out, "[{name}] {description}").unwrap();
    writeln!(out, "  {}", fields(var, &["variant", "description"])).unwrap();
    for (key, value) in sorted(var) {
        match (key.as_str(), value) {
            ("cpus", Value::Array(cpus)) => {
                writeln!(out, "  cpus {}", cpu_totals(cpus)).unwrap();
            }
            (_, Value::Array(items)) => {
                for item in items {
                    let Some(obj) = item.as_object() else {
                        continue;
                    };
                    let singular = key.strip_suffix('s').unwrap_or(key);
                    let line = item_summary(key, obj);
                    writeln!(out, "  {singular} {} {line}", name_of(obj)).unwrap();
                }
            }
            (_, Value::Object(obj)) => {
                writeln!(out, "  {key} {}", fields(obj, &["wall_seconds"])).unwrap();
            }
            _ => {}
        }
    }
    let digests: Vec<String> = sorted(var)
        .into_iter()
        .filter(|(_, v)| v.is_array() || v.is_object())
        .map(|(k, v)| format!("{k}={:016x}", fnv1a(v.to_string().as_bytes())))
        .collect();
    writeln!(out, "  digest json {}", digests.join(" ")).unwrap();
}

/// The fields of one item of the list `key` (a counter, a lock, ...).
fn item_summary(key: &str, obj: &Map<String, Value>) -> String {
    match key {
        "counters" => some_fields(obj, &["count"]),
        "histograms" => some_fields(obj, &["count", "p50", "p99", "max"]),
        "task_groups" => {
            let total = obj.get("total").and_then(Value::as_object);
            let total = total.map(|t| prefixed_fields("total.", t, &[]));
            format!("{} {}", fields(obj, &["name"]), total.unwrap_or_default())
        }
        "findings" => {
            let first = obj["message"].as_str().unwrap_or("").lines().next();
            format!(
                "{} message={:?}",
                fields(obj, &["detector", "message"]),
                first.unwrap_or("")
            )
        }
        _ => fields(obj, &["name", "cgroup"]),
    }
}

/// The text report cut into its blocks (a table, a list), each starting at
/// a line after a blank one and keeping its trailing blank lines, so the
/// blocks put together are the whole text; one digest per block, named by
/// its first word.
fn text_summary(out: &mut String, text: &[&str]) {
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    let mut after_blank = true;
    for line in text {
        let blank = line.trim().is_empty();
        if after_blank && !blank || blocks.is_empty() {
            blocks.push(Vec::new());
        }
        blocks.last_mut().unwrap().push(line);
        after_blank = blank;
    }
    writeln!(out, "[text report]").unwrap();
    for block in blocks {
        let word: String = block[0]
            .trim_start_matches(|c: char| !c.is_alphanumeric())
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        let digest = fnv1a(block.join("\n").as_bytes());
        writeln!(out, "  block {word} digest={digest:016x}").unwrap();
    }
}

/// The snapshot of one scenario: the report's own fields, a summary and
/// digests per variant, then a digest per block of the text report
/// (host-time fields and lines aside).
fn snapshot(scenario: &str, sets: &[&str]) -> String {
    let mut v: Value = serde_json::from_slice(&run(scenario, sets, "json")).expect("JSON");
    for var in v["variants"].as_array_mut().expect("variants") {
        var["stats"]
            .as_object_mut()
            .expect("stats")
            .remove("wall_seconds");
    }
    let text = String::from_utf8(run(scenario, sets, "text")).expect("UTF-8");
    let text: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("engine ["))
        .collect();
    let mut out = format!("# {scenario}");
    for s in sets {
        write!(out, " --set {s}").unwrap();
    }
    out.push('\n');
    let report = v.as_object().expect("report object");
    writeln!(out, "[report]\n  {}", fields(report, &[])).unwrap();
    for var in v["variants"].as_array().unwrap() {
        variant_summary(&mut out, var.as_object().expect("variant object"));
    }
    text_summary(&mut out, &text);
    out
}

/// The snapshot of every run, computed on as many threads as the host has.
fn snapshots() -> Vec<String> {
    let next = AtomicUsize::new(0);
    let got = Mutex::new(vec![String::new(); RUNS.len()]);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads.min(RUNS.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((scenario, sets)) = RUNS.get(i) else {
                    break;
                };
                let snap = snapshot(scenario, sets);
                got.lock().unwrap()[i] = snap;
            });
        }
    });
    got.into_inner().unwrap()
}

/// One line of a snapshot read back: the words naming it (`lock rq_lock`,
/// `digest json`; none for a variant's settings) and its `metric=value`
/// fields in order.
struct Record {
    key: String,
    fields: Vec<(String, String)>,
    line: String,
}

/// A `[heading]` of a snapshot and the records under it.
struct Section {
    name: String,
    heading: String,
    records: Vec<Record>,
}

/// `line` cut at its spaces, a quoted value (with `\"` escapes) kept whole.
fn words(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let (mut quoted, mut escaped) = (false, false);
    for c in line.chars() {
        match c {
            ' ' if !quoted => {
                if !out.last().unwrap().is_empty() {
                    out.push(String::new());
                }
                continue;
            }
            '"' if !escaped => quoted = !quoted,
            _ => {}
        }
        escaped = c == '\\' && !escaped;
        out.last_mut().unwrap().push(c);
    }
    out.retain(|w| !w.is_empty());
    out
}

/// `metric=value` for a word that is a field.
fn as_field(word: &str) -> Option<(&str, &str)> {
    let (metric, value) = word.split_once('=')?;
    let is_name = !metric.is_empty()
        && metric
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    is_name.then_some((metric, value))
}

fn record(line: &str) -> Record {
    let mut key = Vec::new();
    let mut fields: Vec<(String, String)> = Vec::new();
    for word in words(line) {
        match (as_field(&word), fields.last_mut()) {
            (Some((metric, value)), _) => fields.push((metric.into(), value.into())),
            (None, None) => key.push(word),
            // A word past the fields belongs to the last value.
            (None, Some((_, value))) => {
                value.push(' ');
                value.push_str(&word);
            }
        }
    }
    Record {
        key: key.join(" "),
        fields,
        line: line.trim().to_string(),
    }
}

/// A snapshot's `#` line (the run's settings) and its sections.
fn parse(snapshot: &str) -> (String, Vec<Section>) {
    let mut settings = String::new();
    let mut sections: Vec<Section> = Vec::new();
    for line in snapshot.lines() {
        if let Some(rest) = line.strip_prefix('#') {
            settings = rest.trim().to_string();
        } else if let Some(rest) = line.strip_prefix('[') {
            let name = rest.split(']').next().unwrap_or(rest);
            sections.push(Section {
                name: name.to_string(),
                heading: line.to_string(),
                records: Vec::new(),
            });
        } else if !line.trim().is_empty() {
            if sections.is_empty() {
                sections.push(Section {
                    name: String::new(),
                    heading: String::new(),
                    records: Vec::new(),
                });
            }
            sections.last_mut().unwrap().records.push(record(line));
        }
    }
    (settings, sections)
}

/// What a section or record is matched by between two snapshots.
trait Named {
    fn name(&self) -> &str;
}

impl Named for Section {
    fn name(&self) -> &str {
        &self.name
    }
}

impl Named for Record {
    fn name(&self) -> &str {
        &self.key
    }
}

/// The item of `items` that matches `items_before[i]`: the same name, and
/// as many of that name before it.
fn counterpart<'a, T: Named>(items_before: &[T], i: usize, items: &'a [T]) -> Option<&'a T> {
    let name = items_before[i].name();
    let n = items_before[..i]
        .iter()
        .filter(|x| x.name() == name)
        .count();
    items.iter().filter(|x| x.name() == name).nth(n)
}

/// What moved between a recorded snapshot and a new one, one message per
/// metric: `[section] record: metric old -> new`; a record or section
/// that appeared or went is named whole.
fn moved_fields(want: &str, got: &str) -> Vec<String> {
    let (want_settings, want) = parse(want);
    let (got_settings, got) = parse(got);
    let mut out = Vec::new();
    if want_settings != got_settings {
        out.push(format!(
            "run settings: {want_settings:?} -> {got_settings:?}"
        ));
    }
    for (i, old) in want.iter().enumerate() {
        match counterpart(&want, i, &got) {
            Some(new) => moved_in_section(old, new, &mut out),
            None => out.push(format!("[{}] section gone", old.name)),
        }
    }
    for (i, new) in got.iter().enumerate() {
        if counterpart(&got, i, &want).is_none() {
            out.push(format!("[{}] new section: {}", new.name, new.heading));
        }
    }
    out
}

fn moved_in_section(old: &Section, new: &Section, out: &mut Vec<String>) {
    let section = &old.name;
    if old.heading != new.heading {
        out.push(format!(
            "[{section}] heading: {:?} -> {:?}",
            old.heading, new.heading
        ));
    }
    for (i, was) in old.records.iter().enumerate() {
        let Some(now) = counterpart(&old.records, i, &new.records) else {
            out.push(format!("[{section}] gone: {}", was.line));
            continue;
        };
        let record = if was.key.is_empty() {
            String::new()
        } else {
            format!("{}: ", was.key)
        };
        let value = |r: &Record, metric: &str| {
            let found = r.fields.iter().find(|(m, _)| m == metric);
            found.map_or("(none)".to_string(), |(_, v)| v.clone())
        };
        let mut metrics: Vec<&str> = was.fields.iter().map(|(m, _)| m.as_str()).collect();
        for (m, _) in &now.fields {
            if !metrics.contains(&m.as_str()) {
                metrics.push(m);
            }
        }
        for metric in metrics {
            let (a, b) = (value(was, metric), value(now, metric));
            if a != b {
                out.push(format!("[{section}] {record}{metric} {a} -> {b}"));
            }
        }
    }
    for (i, now) in new.records.iter().enumerate() {
        if counterpart(&new.records, i, &old.records).is_none() {
            out.push(format!("[{section}] new: {}", now.line));
        }
    }
}

/// At most this many moved metrics are listed per snapshot.
const MOVED_SHOWN: usize = 40;

#[test]
fn shipped_scenarios_give_the_recorded_results() {
    let got = snapshots();
    if std::env::var_os("SMPSIM_BLESS").is_some() {
        std::fs::create_dir_all(repo(GOLDEN_DIR)).unwrap();
        for ((scenario, _), snap) in RUNS.iter().zip(&got) {
            std::fs::write(snapshot_path(scenario), snap).unwrap();
        }
        return;
    }
    let mut moved = String::new();
    for ((scenario, _), snap) in RUNS.iter().zip(&got) {
        let path = snapshot_path(scenario);
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if want == *snap {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy();
        writeln!(moved, "{GOLDEN_DIR}/{name}:").unwrap();
        let fields = moved_fields(&want, snap);
        for line in fields.iter().take(MOVED_SHOWN) {
            writeln!(moved, "  {line}").unwrap();
        }
        if fields.len() > MOVED_SHOWN {
            writeln!(moved, "  ... and {} more", fields.len() - MOVED_SHOWN).unwrap();
        }
        if fields.is_empty() {
            // Only spacing or order moved: say so rather than nothing.
            writeln!(moved, "  the same fields, laid out differently").unwrap();
        }
    }
    assert!(
        moved.is_empty(),
        "results moved ([section] record: metric recorded -> now):\n{moved}\nif that is intended, re-record with SMPSIM_BLESS=1 and say why"
    );
}

/// A recorded snapshot with one line of one section replaced by `edit`.
fn planted(snapshot: &str, section: &str, key: &str, edit: impl Fn(&str) -> String) -> String {
    let mut current = "";
    let mut out = String::new();
    for line in snapshot.lines() {
        if line.starts_with('[') {
            current = line;
        }
        let is_target = current.starts_with(&format!("[{section}]")) && record(line).key == key;
        let line = if is_target {
            edit(line)
        } else {
            line.to_string()
        };
        writeln!(out, "{line}").unwrap();
    }
    out
}

#[test]
fn a_moved_figure_is_named_by_section_record_and_metric() {
    let recorded = std::fs::read_to_string(repo(GOLDEN_DIR).join("lock-scaling.txt")).unwrap();
    // One lock's acquisitions in one variant move by one.
    let (_, sections) = parse(&recorded);
    let ticket = sections.iter().find(|s| s.name == "ticket").unwrap();
    let lock = ticket
        .records
        .iter()
        .find(|r| r.key == "lock lock")
        .unwrap();
    let (_, was) = lock
        .fields
        .iter()
        .find(|(m, _)| m == "acquisitions")
        .unwrap();
    let now = was.parse::<u64>().unwrap() + 1;
    let moved = planted(&recorded, "ticket", "lock lock", |line| {
        line.replace(
            &format!(" acquisitions={was} "),
            &format!(" acquisitions={now} "),
        )
    });
    assert_eq!(
        moved_fields(&recorded, &moved),
        [format!("[ticket] lock lock: acquisitions {was} -> {now}")]
    );
    // A figure only a digest covers: the digest of its part is named.
    let moved = planted(&recorded, "text report", "block lock_stat", |line| {
        let (head, _) = line.split_once("digest=").unwrap();
        format!("{head}digest=0000000000000000")
    });
    let message = moved_fields(&recorded, &moved);
    assert_eq!(message.len(), 1, "{message:?}");
    assert!(
        message[0].starts_with("[text report] block lock_stat: digest ")
            && message[0].ends_with(" -> 0000000000000000"),
        "{message:?}"
    );
    // A record that went is named whole.
    let moved = planted(&recorded, "mcs", "counter acquisitions", |_| String::new());
    let message = moved_fields(&recorded, &moved);
    assert_eq!(message.len(), 1, "{message:?}");
    assert!(
        message[0].starts_with("[mcs] gone: counter acquisitions count="),
        "{message:?}"
    );
}

#[test]
fn a_quoted_value_is_one_field() {
    let r = record(r#"  standing measured=6 name="a b" text="x \"y z\" w" checked=false"#);
    assert_eq!(r.key, "standing");
    let got: Vec<(&str, &str)> = r
        .fields
        .iter()
        .map(|(m, v)| (m.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("measured", "6"),
            ("name", "\"a b\""),
            ("text", r#""x \"y z\" w""#),
            ("checked", "false"),
        ]
    );
}

#[test]
fn every_shipped_scenario_is_recorded() {
    for dir in [
        "scenarios",
        "scenarios/examples",
        "scenarios/checks",
        "scenarios/contention",
    ] {
        for entry in std::fs::read_dir(repo(dir)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if let Some(stem) = name.strip_suffix(".toml") {
                let path = format!("{dir}/{stem}.toml");
                assert!(
                    RUNS.iter().any(|(s, _)| *s == path),
                    "{path} is not in tests/golden.rs RUNS"
                );
            }
        }
    }
    // And every snapshot belongs to a run (none left behind by a rename).
    for entry in std::fs::read_dir(repo(GOLDEN_DIR)).unwrap() {
        let path = entry.unwrap().path();
        assert!(
            RUNS.iter().any(|(s, _)| snapshot_path(s) == path),
            "{} is the snapshot of no run in tests/golden.rs RUNS",
            path.display()
        );
    }
}
