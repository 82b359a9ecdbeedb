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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
            "contentions",
            "waittime-min",
            "waittime-max",
            "waittime-total",
            "waittime-avg",
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
        if [3, 4, 5, 6, 8, 9, 10, 11, 13].contains(&i) {
            let (int, dec) = cell.split_once('.').expect(cell);
            assert!(
                int.chars().all(|c| c.is_ascii_digit()) && dec.len() == 2,
                "not fixed us: {cell} in {row:?}"
            );
        }
    }
    // The averages are total / count, between the minimum and the maximum.
    let us = |s: &str| s.parse::<f64>().unwrap();
    let contentions: f64 = row[2].parse().unwrap();
    assert!(
        (us(row[6]) - us(row[5]) / contentions).abs() < 0.01,
        "{row:?}"
    );
    let acquisitions: f64 = row[7].parse().unwrap();
    assert!(
        (us(row[11]) - us(row[10]) / acquisitions).abs() < 0.01,
        "{row:?}"
    );
    // A contended wait includes at least the lock word's transfer; a hold
    // of exp(1us) work can round to 0.00.
    assert!(us(row[3]) > 0.0, "{row:?}");
    for (min, avg, max) in [(3, 6, 4), (8, 11, 9)] {
        assert!(
            us(row[min]) <= us(row[avg]) && us(row[avg]) <= us(row[max]),
            "min {} avg {} max {}: {row:?}",
            row[min],
            row[avg],
            row[max]
        );
    }
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
