//! The shipped library of kernel paths (scenarios/lib/, included as
//! `lib:NAME`): every file compiles, every function it defines runs in a
//! small scenario to its end, and the table compiled into smpsim is the
//! directory. Also `mm_per_task` (will-it-scale's processes mode).

use std::path::{Path, PathBuf};

use smpsim_scenario::{parse, shipped};

fn lib_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/lib")
}

/// Files another library file's functions use (its `Uses ...` note).
fn needs(file: &str) -> &'static [&'static str] {
    match file {
        "munmap.toml" => &["fault.toml"],
        _ => &[],
    }
}

/// The names of the `[functions]` a library file defines, in order.
fn functions(text: &str) -> Vec<String> {
    let doc: toml::Table = text.parse().unwrap();
    doc.get("functions")
        .and_then(|f| f.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

/// Every variable a library function reads, declared for a task on 4 CPUs.
const VARS: &str = r#"{ proc = "task_index", node = 0, vma_locked = 0, pages = 4,
    wakee_cpu = "(task_index + 1) % nr_cpus", futex_bucket = "task_index",
    pipe = "task_index", ep = "task_index", nfds = 4, semset = 0, semnum = "task_index",
    file = "task_index", efd = "task_index", usock = "task_index",
    target = "(task_index + 1) % nr_cpus", cpu = 1, t = 0, t_op = 0, obj_bytes = 192 }"#;

/// A scenario of `tasks` task groups' worth of `code`, including `files`.
fn scenario(files: &[&str], group: &str) -> String {
    let include: Vec<String> = files.iter().map(|f| format!("\"lib:{f}\"")).collect();
    format!(
        "include = [{}]\n[scenario]\nname = \"lib\"\nduration = \"100ms\"\n\
         [machine]\npreset = \"generic-x86\"\n[machine.topology]\ncores_per_llc = 4\n{group}",
        include.join(", ")
    )
}

fn run(text: &str) -> smpsim_kernel::RunResult {
    let path = std::env::temp_dir().join("smpsim-library-test.toml");
    let scn = parse(&path, text.to_string()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    smpsim_kernel::simulate(&scn.compile(None, &[]).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn the_compiled_in_table_is_the_directory() {
    let mut on_disk: Vec<String> = std::fs::read_dir(lib_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    on_disk.sort();
    assert_eq!(shipped::names(), on_disk);
    for name in &on_disk {
        let (_, text) = shipped::get(name).unwrap();
        assert_eq!(text, std::fs::read_to_string(lib_dir().join(name)).unwrap());
    }
    assert!(on_disk.len() >= 12, "{on_disk:?}");
}

#[test]
fn every_function_cites_the_kernel_and_every_cost_its_source() {
    for (name, text) in shipped::FILES {
        // Each function is preceded by a comment naming a kernel function.
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.contains(" = '''") && !l.starts_with(' ') {
                let comment = lines[..i]
                    .iter()
                    .rev()
                    .take_while(|p| p.starts_with('#'))
                    .fold(String::new(), |a, p| a + p);
                assert!(
                    comment.contains('('),
                    "{name}: `{l}` cites no kernel function"
                );
            }
            if l.trim_start().starts_with("work(") {
                assert!(
                    l.contains("// assumed:") || l.contains("// ") && l.contains(".c"),
                    "{name}:{}: a cost without its source: {l}",
                    i + 1
                );
            }
        }
    }
}

#[test]
fn every_library_function_runs_in_a_small_scenario() {
    for (file, text) in shipped::FILES {
        let mut files: Vec<&str> = needs(file).to_vec();
        files.push(file);
        if *file == "hotplug.toml" {
            // CPU 1 down and up again, from a task on CPU 0.
            let group = format!(
                "[[tasks]]\nname = \"t\"\ncount = 1\ncpus = \"0\"\nvars = {VARS}\n\
                 code = '''syscall(hp) {{ cpu_down(); cpu_up(); }} count(done);'''\n"
            );
            let r = run(&scenario(&files, &group));
            assert_eq!(r.counter("done").map(|c| c.count), Some(1), "{file}");
            continue;
        }
        for f in functions(text) {
            // A building block that returns holding a lock, and its release.
            let release = match f.as_str() {
                "lock_vma_under_rcu" => "if (vma_locked == 1) { up_read(vma_lock[this_cpu()]); }",
                _ => "",
            };
            let group = format!(
                "[[tasks]]\nname = \"t\"\nper_cpu = 1\nmm = \"one\"\nvars = {VARS}\n\
                 code = '''loop (3) {{ syscall(lib) {{ {f}(); {release} }} count(done); }}'''\n"
            );
            let r = run(&scenario(&files, &group));
            let done = r.counter("done").map(|c| c.count);
            assert_eq!(done, Some(12), "{file}: {f} did not run to its end");
            assert!(r.findings.is_empty(), "{file}: {f}: {:?}", r.findings);
        }
    }
}

/// mm.toml writes fault.toml's and munmap.toml's paths coarsely, with the
/// same objects (`mmap_lock`, `vma_lock`): a scenario includes one or the
/// others, and including both is refused as a name defined twice.
const COARSE: &str = "mm.toml";
const DETAILED: &[&str] = &["fault.toml", "munmap.toml"];

#[test]
fn every_library_file_compiles_with_the_others() {
    // One scenario including all of them but one of the alternatives: no
    // name is defined twice.
    let group = format!(
        "[[tasks]]\nname = \"t\"\nper_cpu = 1\nvars = {VARS}\ncode = '''syscall(x) {{ sys_getppid(); }} count(done);'''\n"
    );
    for leave_out in [&[COARSE][..], DETAILED] {
        let files: Vec<&str> = shipped::FILES
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| !leave_out.contains(n))
            .collect();
        let r = run(&scenario(&files, &group));
        assert_eq!(r.counter("done").map(|c| c.count), Some(4), "{files:?}");
    }
    let both = scenario(&[COARSE, DETAILED[0]], &group);
    let path = std::env::temp_dir().join("smpsim-library-both.toml");
    let Err(err) = parse(&path, both) else {
        panic!("mm.toml with fault.toml is not refused");
    };
    assert!(
        err.to_string()
            .contains("`mmap_lock` is defined here and in the included"),
        "{err}"
    );
}

#[test]
fn an_unknown_shipped_file_is_a_located_error_listing_them() {
    let text = "include = [\"lib:futx.toml\"]\n[scenario]\nname = \"x\"\nduration = \"1ms\"\n";
    let e = parse(Path::new("s.toml"), text.into())
        .unwrap_err()
        .to_string();
    assert!(e.contains("s.toml:1:12"), "{e}");
    assert!(e.contains("ships no library file `futx.toml`"), "{e}");
    assert!(e.contains("futex.toml"), "{e}");
}

/// `mm_per_task`: each task its own mm, so a TLB flush reaches no other
/// task's CPU; the same tasks as threads of one mm interrupt each other.
#[test]
fn mm_per_task_gives_each_task_its_own_address_space() {
    let text = |per_task: bool| {
        let mm = if per_task {
            "mm_per_task = true"
        } else {
            "mm = \"one\""
        };
        scenario(
            &[],
            &format!(
                "[[tasks]]\nname = \"t\"\nper_cpu = 1\n{mm}\n\
                 code = '''for (;;) {{ syscall(madvise) {{ flush_tlb_mm_range(100ns); }} count(done); work(exp(2us)); }}'''\n"
            ),
        )
    };
    // The flush IPIs' handlers are the CPUs' irq time.
    let irq = |r: &smpsim_kernel::RunResult| r.cpus.iter().map(|c| c.times.irq).sum::<u64>();
    let (procs, threads) = (run(&text(true)), run(&text(false)));
    assert!(
        irq(&threads) > 10 * irq(&procs).max(1),
        "{} vs {}",
        irq(&threads),
        irq(&procs)
    );
    let both = "mm_per_task = true\nmm = \"one\"";
    let e = parse(
        Path::new("s.toml"),
        scenario(
            &[],
            &format!("[[tasks]]\nname = \"t\"\nper_cpu = 1\n{both}\ncode = '''work(1us);'''\n"),
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("s.toml:12:15"), "{e}");
    assert!(e.contains("cannot also share the named `mm`"), "{e}");
}
