//! Issue 41 item 2 (layout of kernel-internal objects): `line` on every
//! lock kind that keeps its state on one modelled line (rwsem, semaphore,
//! seqcount, rt_mutex, besides spinlock, rwlock and mutex). Bad input is
//! located, exits 2 and writes no result file; the rwsem-layout example
//! shows the rwsem's line bouncing when a read field shares it.

mod common;

use common::{counter, lock_row, repo, smpsim};

/// Each lock kind with an atomic beside it, all exercised.
const GOOD: &str = r#"[scenario]
name = "t"
duration = "1ms"
[machine]
preset = "generic-x86"
[objects]
sem_rw = { type = "rwsem", line = "a" }
c_rw = { type = "atomic", line = "a" }
tokens = { type = "semaphore", initial = 1, line = "b" }
c_sem = { type = "atomic", line = "b" }
seq = { type = "seqcount", line = "c" }
c_seq = { type = "atomic", line = "c" }
rt = { type = "mutex", kind = "rt_mutex", line = "d" }
c_rt = { type = "atomic", line = "d" }
pcpu = { type = "percpu_rwsem" }
[[tasks]]
name = "a"
per_cpu = 1
code = '''
    for (;;) {
        down_write(sem_rw); atomic_inc(c_rw); up_write(sem_rw);
        down(tokens); atomic_inc(c_sem); up(tokens);
        write_seqcount_begin(seq); atomic_inc(c_seq); write_seqcount_end(seq);
        mutex_lock(rt); atomic_inc(c_rt); mutex_unlock(rt);
        work(1us);
    }
'''
"#;

#[test]
fn line_on_a_kind_without_a_line_or_beside_another_lock_is_located() {
    let cases = [
        // A percpu_rw_semaphore has no lock word on a line in the model.
        (
            "percpu-rwsem",
            GOOD.replace(
                "pcpu = { type = \"percpu_rwsem\" }",
                "pcpu = { type = \"percpu_rwsem\", line = \"a\" }",
            ),
            15,
            "has no lock word on a shared line",
        ),
        // Two lock words on one line: the model gives each its own Line.
        (
            "rwsem-beside-semaphore",
            GOOD.replace(
                "tokens = { type = \"semaphore\", initial = 1, line = \"b\" }",
                "tokens = { type = \"semaphore\", initial = 1, line = \"a\" }",
            ),
            9,
            "already holds the lock `sem_rw`",
        ),
        // An rwsem alone on its line: a typo or a neighbour left out.
        (
            "rwsem-alone",
            GOOD.replace(
                "c_rw = { type = \"atomic\", line = \"a\" }",
                "c_rw = { type = \"atomic\" }",
            ),
            7,
            "line `a` has only one object on it",
        ),
        // A per-CPU seqcount beside a global atomic.
        (
            "per-cpu-seqcount",
            GOOD.replace(
                "seq = { type = \"seqcount\", line",
                "seq = { type = \"seqcount\", per_cpu = true, line",
            ),
            12,
            "a per-CPU object shares lines only with per-CPU objects",
        ),
    ];
    let dir = common::dir("layout-kinds");
    common::refused_variants(&dir, GOOD, cases);
}

/// Every kind hosts its atomic: the line's transfers are reported in the
/// lock's row, none in the atomic's.
#[test]
fn each_lock_kind_hosts_an_atomic_on_its_line() {
    let dir = common::dir("layout-kinds-good");
    let path = dir.join("good.toml");
    std::fs::write(&path, GOOD.replace("generic-x86", "amd-milan-96")).unwrap();
    let out = smpsim()
        .args(["run", path.to_str().unwrap(), "--format", "json"])
        .args(["--set", "machine.topology.cores_per_llc=4"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let var = &v["variants"][0];
    for (lock, atomic) in [
        ("sem_rw", "c_rw"),
        ("tokens", "c_sem"),
        ("seq", "c_seq"),
        ("rt", "c_rt"),
    ] {
        let bounces = |name| lock_row(var, name)["bounces"].as_u64().unwrap();
        assert_eq!(bounces(atomic), 0, "{atomic}: counted under {lock}");
        assert!(bounces(lock) > 0, "{lock}: {}", lock_row(var, lock));
    }
}

/// The rwsem-layout example: with i_mmap on the rwsem's line, its line
/// moves far more often than the rwsem's and i_mmap's lines together
/// when each is on its own, and the writers wait longer for it.
#[test]
fn the_rwsem_layout_example_bounces_the_rwsem_line() {
    let v = common::run_example("scenarios/examples/rwsem-layout.toml", "5ms", "1ms");
    let (shared, moved) = (&v["variants"][0], &v["variants"][1]);
    assert_eq!(shared["variant"], "shared");
    assert_eq!(moved["variant"], "moved");
    let bounces = |var, name| lock_row(var, name)["bounces"].as_u64().unwrap();
    assert_eq!(bounces(shared, "i_mmap"), 0, "counted under the rwsem");
    let apart = bounces(moved, "i_mmap_rwsem") + bounces(moved, "i_mmap");
    assert!(
        bounces(shared, "i_mmap_rwsem") > apart,
        "{} vs {apart}",
        bounces(shared, "i_mmap_rwsem")
    );
    let links = |var: &serde_json::Value| counter(var, "links");
    assert!(
        links(shared) < links(moved),
        "{} vs {}",
        links(shared),
        links(moved)
    );
    assert!(repo("scenarios/examples/rwsem-layout.toml").exists());
}
