//! `break;`: leaving a loop early, as lib/lockref.c's `CMPXCHG_LOOP`
//! does after 100 failed attempts (`if (!--retry) break;`) before it
//! takes the spinlock. What a `break` does in each loop, the lockref
//! example's fallback as CPUs are added, and bad input as a located
//! error, exit 2 and no result file.

mod common;

use common::{dir, refused_at, scenario, smpsim, stderr, At};
use serde_json::Value;

fn run(d: &std::path::Path, rest: &str) -> Value {
    let p = scenario(d, "s.toml", rest);
    let out = smpsim()
        .arg("run")
        .arg(&p)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn counter(r: &Value, name: &str) -> u64 {
    r["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .map_or(0, |c| c["count"].as_u64().unwrap())
}

/// In a counted loop, a forever loop and `for_each_cpu`, `break` leaves
/// the innermost loop at once (from inside an `if`), and the code after
/// the loop runs; the loop around it goes on.
#[test]
fn break_leaves_the_innermost_loop_and_goes_on_after_it() {
    let d = dir("loop-break");
    let v = run(
        &d,
        "[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''
            loop (2) {
                i = 0;
                loop (10) {
                    count(counted);
                    i = i + 1;
                    if (i == 3) { break; }
                }
                count(after_counted);
            }
            for (;;) {
                count(forever);
                break;
                count(never);
            }
            for_each_cpu(cpu, cpu_online_mask) {
                count(each);
                break;
            }
            count(done);
            exit();
        '''\n",
    );
    let r = &v["variants"][0];
    for (name, want) in [
        ("counted", 6),
        ("after_counted", 2),
        ("forever", 1),
        ("never", 0),
        ("each", 1),
        ("done", 1),
    ] {
        assert_eq!(counter(r, name), want, "{name}");
    }
}

/// A retry limit of one: every failed attempt gives up at once, so the
/// fallbacks are the failures counted on the word (to within the four
/// CPUs' attempts cut by the ends of the measured part), and there are
/// some (four CPUs on one word).
#[test]
fn a_break_in_a_cmpxchg_loop_gives_up_after_the_failed_attempt() {
    let d = dir("cmpxchg-break");
    let text = common::HEADER.replace("cores_per_llc = 1", "cores_per_llc = 4")
        + "[objects]\nx = { type = \"atomic\" }\n[[tasks]]\nname = \"t\"\nper_cpu = 1\ncode = '''
            for (;;) {
                syscall(add) {
                    gave_up = 0;
                    atomic_read(x, old);
                    work(2ns);
                    atomic_try_cmpxchg(x, old) {
                        gave_up = 1;
                        break;
                    }
                    if (gave_up == 1) { count(fallbacks); } else { count(swapped); }
                }
                work(exp(50ns));
            }
        '''\n";
    let p = d.join("s.toml");
    std::fs::write(&p, text).unwrap();
    let out = smpsim()
        .arg("run")
        .arg(&p)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["variants"][0];
    let fails = r["locks"][0]["cmpxchg_fails"].as_u64().unwrap_or(0);
    let fallbacks = counter(r, "fallbacks");
    assert!(fallbacks > 10, "{fallbacks} fallbacks");
    assert!(counter(r, "swapped") > fallbacks, "most attempts succeed");
    // One fallback per failed attempt, but for a CPU's last one when the
    // run (or its warmup) ended between the failure and the count.
    assert!(
        fallbacks <= fails + 4 && fails <= fallbacks + 4,
        "{fallbacks} fallbacks for {fails} failed attempts"
    );
}

/// lockref_get() (scenarios/examples/lockref-loop.toml) with the kernel's
/// limit of 100 failed attempts: no fallback to the spinlock on up to 8
/// CPUs of one LLC; on 16 (two LLCs) some gets take it (in the model, the
/// `cpu_relax()` variant's: 40 of 2,699 gets, where the loop without it
/// fails ~2.6 times per get and never reaches 100).
#[test]
fn lockref_falls_back_to_the_spinlock_only_under_heavy_contention() {
    for (topology, fallbacks_expected) in [
        (vec!["machine.topology.cores_per_llc=8"], false),
        (
            vec![
                "machine.topology.cores_per_llc=8",
                "machine.topology.llcs_per_node=2",
            ],
            true,
        ),
    ] {
        let mut cmd = smpsim();
        cmd.arg("run")
            .arg(common::repo("scenarios/examples/lockref-loop.toml"));
        for t in &topology {
            cmd.args(["--set", t]);
        }
        let out = cmd.args(["--format", "json"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut any = false;
        for r in v["variants"].as_array().unwrap() {
            let fallbacks = counter(r, "fallbacks");
            let lock = r["locks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["name"] == "d_lock")
                .unwrap();
            assert_eq!(lock["acquisitions"].as_u64().unwrap(), fallbacks);
            if !fallbacks_expected {
                assert_eq!(fallbacks, 0, "{topology:?}: {fallbacks}");
            }
            any |= fallbacks > 0;
        }
        assert_eq!(any, fallbacks_expected, "{topology:?}");
    }
}

#[test]
fn break_mistakes_are_located_errors_without_a_result() {
    let d = dir("loop-break-errors");
    let task = |code: &str| {
        format!(
            "[objects]\nm = {{ type = \"mutex\" }}\ns = {{ type = \"seqcount\" }}\n[functions]\ngive_up = '''work(1ns); break;'''\n[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''{code}'''\n"
        )
    };
    for (what, rest, bad, says) in [
        (
            "break outside a loop",
            task("work(1us); break;"),
            "break;'''",
            "`break` outside a loop",
        ),
        (
            "break out of a syscall",
            task("for (;;) { syscall(x) { break; } }"),
            "break; }",
            "`break` would jump out of `syscall`'s body",
        ),
        (
            "break out of a guard",
            task("for (;;) { mutex_guard(m) { break; } }"),
            "break; }",
            "`break` would jump out of `mutex_guard`'s body",
        ),
        (
            "break out of a seqcount read",
            task("for (;;) { read_seqcount(s) { break; } }"),
            "break; }",
            "`break` would jump out of `read_seqcount`'s body",
        ),
        (
            "break out of a function",
            task("for (;;) { give_up(); }"),
            "break;'''",
            "`break` would jump out of function `give_up`",
        ),
        (
            "break with an argument",
            task("for (;;) { work(1us); break(2); }"),
            "2)",
            "`break` takes no positional arguments",
        ),
    ] {
        let p = scenario(&d, "s.toml", &rest);
        let text = std::fs::read_to_string(&p).unwrap();
        let (line, col) = text
            .lines()
            .enumerate()
            .filter_map(|(i, l)| l.find(bad).map(|c| (i + 1, l[..c].chars().count() + 1)))
            .last()
            .unwrap();
        // The last place `bad` stands (the break, not the loop it names).
        refused_at(what, &p, At::LineCol(line, col), says);
    }
}
