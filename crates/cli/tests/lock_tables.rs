//! Lock tables as kernel people know them: `lock_stat` with
//! `/proc/lock_stat`'s columns and fixed microseconds, and `perf lock
//! contention`'s table sorted by total wait.

mod common;

use common::{repo, smpsim};

fn run(scenario: &str, extra: &[&str]) -> String {
    let out = smpsim()
        .args(["run", "-q", repo(scenario).to_str().unwrap()])
        .args([
            "--set",
            "scenario.duration=20ms",
            "--set",
            "scenario.warmup=2ms",
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn lock_stat_prints_the_kernels_columns_in_fixed_microseconds() {
    let text = run("scenarios/examples/mutex-contention.toml", &[]);
    let at = text.find("lock_stat (times in us").expect(&text);
    let mut lines = text[at..].lines().skip(1);
    let head: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        head,
        [
            "class",
            "name",
            "variant",
            "con-bounces",
            "contentions",
            "waittime-min",
            "waittime-max",
            "waittime-total",
            "waittime-avg",
            "acq-bounces",
            "acquisitions",
            "holdtime-min",
            "holdtime-max",
            "holdtime-total",
            "holdtime-avg",
            "bounces",
            "spin-total",
            "handoffs"
        ]
    );
    lines.next(); // dashes
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row[0], "big_lock");
    for (i, cell) in row.iter().enumerate() {
        if [4, 5, 6, 7, 10, 11, 12, 13, 15].contains(&i) {
            let (int, dec) = cell.split_once('.').expect(cell);
            assert!(
                int.chars().all(|c| c.is_ascii_digit()) && dec.len() == 2,
                "not fixed us: {cell} in {row:?}"
            );
        }
    }
    // The averages are total / count, between the minimum and the maximum.
    let us = |s: &str| s.parse::<f64>().unwrap();
    let contentions: f64 = row[3].parse().unwrap();
    assert!(
        (us(row[7]) - us(row[6]) / contentions).abs() < 0.01,
        "{row:?}"
    );
    let acquisitions: f64 = row[9].parse().unwrap();
    assert!(
        (us(row[13]) - us(row[12]) / acquisitions).abs() < 0.01,
        "{row:?}"
    );
    // Bounces are events on a lock last acquired on another CPU: at most
    // one per contention and per acquisition, and 16 CPUs taking turns
    // move it nearly every time.
    let (con_bounces, acq_bounces): (f64, f64) = (row[2].parse().unwrap(), row[8].parse().unwrap());
    assert!(con_bounces <= contentions && con_bounces > 0.0, "{row:?}");
    assert!(
        acq_bounces <= acquisitions && acq_bounces > acquisitions / 2.0,
        "{row:?}"
    );
    // A contended wait includes at least the lock word's transfer; a hold
    // of exp(1us) work can round to 0.00.
    assert!(us(row[4]) > 0.0, "{row:?}");
    for (min, avg, max) in [(4, 7, 5), (10, 13, 11)] {
        assert!(
            us(row[min]) <= us(row[avg]) && us(row[avg]) <= us(row[max]),
            "min {} avg {} max {}: {row:?}",
            row[min],
            row[avg],
            row[max]
        );
    }
}

/// A reader-writer lock's read side is a class of its own (`NAME-R`
/// beside `NAME-W`), with the kernel's columns filled from its own counts
/// and the model's lock-wide columns left to the write row.
#[test]
fn lock_stat_gives_the_read_side_its_own_row() {
    let text = run("scenarios/examples/mmap-lock.toml", &[]);
    let at = text.find("lock_stat (times in us").expect(&text);
    let table: Vec<Vec<&str>> = text[at..]
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    let columns = table[0].len() - 1; // "class name" is two words
    let row = |suffix: &str| {
        table
            .iter()
            .find(|r| r[0].ends_with(suffix))
            .unwrap_or_else(|| panic!("no {suffix} row:\n{text}"))
    };
    let (read, write) = (row("-R"), row("-W"));
    assert_eq!(read.len(), columns, "{read:?}");
    assert_eq!(write.len(), columns, "{write:?}");
    assert_eq!(read[columns - 3..], ["-", "-", "-"], "{read:?}");
    // Readers are the many acquisitions here, the writer the few.
    let acquisitions = |r: &[&str]| r[9].parse::<u64>().unwrap();
    assert!(
        acquisitions(read) > 10 * acquisitions(write),
        "{read:?} {write:?}"
    );
}

#[test]
fn perf_lock_contention_is_sorted_by_total_wait() {
    let text = run(
        "scenarios/examples/mmap-lock.toml",
        &["--format", "perf-lock"],
    );
    let mut blocks = 0;
    for block in text.split("# perf lock contention [").skip(1) {
        blocks += 1;
        let mut lines = block.lines().skip(1);
        assert_eq!(
            lines.next().unwrap(),
            " contended   total wait     max wait     avg wait         type   name"
        );
        let ns = |v: &str, unit: &str| {
            let v: f64 = v.parse().unwrap();
            v * match unit {
                "ns" => 1.0,
                "us" => 1e3,
                "ms" => 1e6,
                "s" => 1e9,
                u => panic!("unit {u}"),
            }
        };
        let totals: Vec<f64> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let c: Vec<&str> = l.split_whitespace().collect();
                assert!(c[7].starts_with("rwsem:"), "{l}");
                assert_eq!(c[8], "mmap_lock");
                ns(c[1], c[2])
            })
            .collect();
        assert!(!totals.is_empty(), "{text}");
        assert!(totals.windows(2).all(|w| w[0] >= w[1]), "{text}");
    }
    assert_eq!(blocks, 2, "{text}");
}

/// Issue 37: `--format lkml` shows every lock of every variant. A lock
/// only the second variant has (a mutex replaced by another) shows its
/// figures, the variant without it `-`, not a silent drop.
#[test]
fn lkml_shows_a_lock_that_only_one_variant_has() {
    let d = common::dir("lkml-one-variant-lock");
    let s = d.join("lk.toml");
    std::fs::write(
        &s,
        r#"[scenario]
name = "lk"
duration = "2ms"
[machine]
preset = "generic-x86"
[machine.topology]
cores_per_llc = 4
[objects]
old_mutex = { type = "mutex" }
L = { type = "alias", to = "old_mutex" }
[[tasks]]
name = "t"
per_cpu = 1
code = '''for (;;) { syscall(x) { mutex_guard(L) { work(exp(2us)); } } work(exp(1us)); }'''
[variant.before]
description = "one mutex"
[variant.after]
description = "a new mutex only this variant has"
objects.new_mutex = { type = "mutex" }
objects.L = { type = "alias", to = "new_mutex" }
"#,
    )
    .unwrap();
    let o = common::smpsim()
        .args(["run", "-q", s.to_str().unwrap(), "--format", "lkml"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let row = |m: &str| -> Vec<String> {
        let l = text.lines().find(|l| l.ends_with(m)).expect(&text);
        l.split_whitespace().map(String::from).collect()
    };
    let new = row("new_mutex contentions");
    assert_eq!(new[0], "-", "before has no new_mutex: {new:?}");
    assert_eq!(new[1], "-", "no %change against nothing: {new:?}");
    assert!(new[2].parse::<u64>().unwrap() > 0, "{new:?}");
    let wait = row("new_mutex wait total");
    assert_eq!(wait[..2], ["-", "-"]);
    assert_ne!(wait[2], "0ns");
    let old = row("old_mutex contentions");
    assert!(
        old[0].parse::<u64>().unwrap() > 0 && old[2] == "0",
        "{old:?}"
    );
}

/// Issue 37: the text `lock_stat` table shows an atomic whose line moved
/// (lockdep's columns `-`, its bounces), and a lock only one variant has,
/// matched by name rather than by place.
#[test]
fn lock_stat_shows_atomics_and_locks_of_one_variant() {
    let text = run("scenarios/examples/false-sharing.toml", &[]);
    let row = text
        .lines()
        .find(|l| l.starts_with("hits ") && l.contains("aligned"))
        .expect(&text);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells.len(), 17, "{row}");
    assert!(cells[2..14].iter().all(|c| *c == "-"), "{row}");
    assert!(cells[14].parse::<u64>().unwrap() > 1000, "bounces: {row}");
    assert!(
        text.contains("(-: an object lockdep does not track"),
        "{text}"
    );
    // Shared, the counter's transfers are the lock's: no row of its own.
    assert!(!text
        .lines()
        .any(|l| l.starts_with("hits ") && l.contains("shared")));

    let d = common::dir("lock-stat-one-variant");
    let s = d.join("lk.toml");
    std::fs::write(
        &s,
        "[scenario]\nname = \"lk\"\nduration = \"2ms\"\n[machine]\npreset = \"generic-x86\"\n\
         [machine.topology]\ncores_per_llc = 4\n[objects]\nold_mutex = { type = \"mutex\" }\n\
         L = { type = \"alias\", to = \"old_mutex\" }\n[[tasks]]\nname = \"t\"\nper_cpu = 1\n\
         code = '''for (;;) { syscall(x) { mutex_guard(L) { work(exp(2us)); } } work(exp(1us)); }'''\n\
         [variant.before]\ndescription = \"one mutex\"\n[variant.after]\ndescription = \"another\"\n\
         objects.new_mutex = { type = \"mutex\" }\nobjects.L = { type = \"alias\", to = \"new_mutex\" }\n",
    )
    .unwrap();
    let o = smpsim().args(["run", "-q"]).arg(&s).output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    let row = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row:\n{text}"))
            .split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("new_mutex")[1], "after");
    assert!(row("new_mutex")[9].parse::<u64>().unwrap() > 0);
    assert_eq!(row("old_mutex")[1], "before");
}
