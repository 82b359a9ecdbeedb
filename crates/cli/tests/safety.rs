//! Safety (issue 37): no output is written through a link planted at its
//! path or at a temporary name (`run -o`, `--trace`, `sweep -o`, `sweep
//! merge`, `report`, `plot`, `fmt -w`, `calibrate -o`, `host compare`'s
//! profile); a scenario reads nothing outside its own directory tree
//! unless `--allow-path` names it, and an error never quotes such a file;
//! no output replaces an input of the run (the scenario, an included file,
//! the machine profile).
//!
//! Each test plants links to a `victim` file (one another user owns, in
//! the reproducers) and shows it is left byte for byte as it was.

mod common;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{bin, dir, refused, scenario, smpsim, stderr, HEADER, TASK};

/// The tests that measure this host (calibrate, host compare) take turns:
/// two calibrations pinned to the same 2 CPUs wait on each other for
/// minutes.
static HOST: std::sync::Mutex<()> = std::sync::Mutex::new(());

const VICTIM: &str = "victim: must stay as it is\n";

fn victim(d: &Path) -> PathBuf {
    let v = d.join("victim");
    std::fs::write(&v, VICTIM).unwrap();
    v
}

fn assert_untouched(v: &Path) {
    assert_eq!(
        std::fs::read_to_string(v).unwrap(),
        VICTIM,
        "{} was written",
        v.display()
    );
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

fn is_regular(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file())
}

/// Runs `smpsim ARGS` in `d` after planting links to `victim` at every
/// temporary name of `out` the process could use that can be known in
/// advance: the `.OUT.tmpPID` of earlier versions (the issue's
/// reproducer) and the `.OUT.PID.` shape of today's, whose random part
/// cannot be guessed. bash plants them with its own PID, then `exec`s
/// smpsim, which keeps it.
fn with_planted_links(d: &Path, out: &str, victim: &Path, args: &[&str]) -> (Output, Vec<PathBuf>) {
    let script = format!(
        r#"ln -s "$1" ".{out}.tmp$$" && ln -s "$1" ".{out}.$$.aaaaaa.tmp" && ln -s "$1" ".{out}.$$.tmp" && echo $$ > pid && shift && exec "$0" "$@""#
    );
    let o = Command::new("bash")
        .current_dir(d)
        .arg("-c")
        .arg(script)
        .arg(bin())
        .arg(victim)
        .args(args)
        .output()
        .unwrap();
    let pid = std::fs::read_to_string(d.join("pid")).unwrap();
    std::fs::remove_file(d.join("pid")).unwrap();
    let pid = pid.trim();
    let planted = vec![
        d.join(format!(".{out}.tmp{pid}")),
        d.join(format!(".{out}.{pid}.aaaaaa.tmp")),
        d.join(format!(".{out}.{pid}.tmp")),
    ];
    for p in &planted {
        assert!(is_link(p), "{} is no longer the planted link", p.display());
    }
    (o, planted)
}

/// Plants a link to `victim` at `at`.
fn plant(victim: &Path, at: &Path) {
    let _ = std::fs::remove_file(at);
    symlink(victim, at).unwrap();
}

/// The issue's reproducer, `ln -s victim .out.json.tmp$BASHPID; exec
/// smpsim run s.toml -o out.json`, and a link at the output path itself.
#[test]
fn run_o_never_writes_through_a_planted_link() {
    let d = dir("safety-run");
    let v = victim(&d);
    scenario(&d, "s.toml", TASK);
    let (o, _) = with_planted_links(&d, "out.json", &v, &["run", "s.toml", "-o", "out.json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_untouched(&v);
    let out = d.join("out.json");
    assert!(is_regular(&out));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .starts_with("c on generic-x86"));

    // A link at the output path: refused before the run, the link and its
    // target as they were.
    let link = d.join("link.json");
    plant(&v, &link);
    let o = smpsim()
        .current_dir(&d)
        .args(["run", "s.toml", "-o", "link.json"])
        .output()
        .unwrap();
    refused(
        &o,
        "link.json: is a symbolic link; smpsim does not write through a link",
    );
    assert!(is_link(&link));
    assert_untouched(&v);
    // A dangling one: its target is not created.
    let dangling = d.join("dangling.json");
    symlink(d.join("created"), &dangling).unwrap();
    let o = smpsim()
        .current_dir(&d)
        .args(["run", "s.toml", "-o", "dangling.json"])
        .output()
        .unwrap();
    refused(&o, "is a symbolic link");
    assert!(!d.join("created").exists());
}

/// A link to a descriptor the process holds is the one link written
/// through: `-o /dev/stdout` reaches stdout (here a pipe).
#[test]
fn dev_stdout_is_still_an_output() {
    let d = dir("safety-stdout");
    scenario(&d, "s.toml", TASK);
    let o = smpsim()
        .current_dir(&d)
        .args(["run", "s.toml", "-o", "/dev/stdout"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("c on generic-x86"));
}

#[test]
fn trace_never_writes_through_a_planted_link() {
    let d = dir("safety-trace");
    let v = victim(&d);
    scenario(&d, "s.toml", TASK);
    for name in ["t.json", "t.json.gz"] {
        let (o, _) = with_planted_links(
            &d,
            name,
            &v,
            &["run", "s.toml", "-q", "--trace", name, "-o", "/dev/null"],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_untouched(&v);
        assert!(is_regular(&d.join(name)));
    }
    let link = d.join("link.json");
    plant(&v, &link);
    let o = smpsim()
        .current_dir(&d)
        .args(["run", "s.toml", "--trace", "link.json"])
        .output()
        .unwrap();
    refused(&o, "--trace link.json: is a symbolic link");
    assert_untouched(&v);
}

/// `sweep -o` appends in place: a link there is refused, and so it is
/// for `sweep merge -o`, `report -o` and `plot -o`, which replace.
#[test]
fn sweep_and_its_readers_never_write_through_a_planted_link() {
    let d = dir("safety-sweep");
    let v = victim(&d);
    let counting = "[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''work(1us); count(x);'''\n";
    scenario(&d, "s.toml", counting);
    let link = d.join("r.jsonl");
    plant(&v, &link);
    let o = smpsim()
        .current_dir(&d)
        .args(["sweep", "s.toml", "-q", "-o", "r.jsonl"])
        .output()
        .unwrap();
    refused(&o, "r.jsonl: is a symbolic link");
    assert_untouched(&v);
    // A real results file for the commands that read one.
    let o = smpsim()
        .current_dir(&d)
        .args(["sweep", "s.toml", "-q", "--seeds", "2", "-o", "good.jsonl"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let runs: [&[&str]; 3] = [
        &["sweep", "merge", "good.jsonl", "-o"],
        &["report", "good.jsonl", "-o"],
        &[
            "plot",
            "good.jsonl",
            "--x",
            "seed",
            "--y",
            "counter.x.rate",
            "-o",
        ],
    ];
    for args in runs {
        let out = "out.file";
        plant(&v, &d.join(out));
        let o = smpsim()
            .current_dir(&d)
            .args(args)
            .arg(out)
            .output()
            .unwrap();
        refused(&o, "out.file: is a symbolic link");
        assert_untouched(&v);
        std::fs::remove_file(d.join(out)).unwrap();
        let (o, _) = with_planted_links(&d, out, &v, &[args, &[out]].concat());
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(is_regular(&d.join(out)), "{args:?}");
        assert_untouched(&v);
        std::fs::remove_file(d.join(out)).unwrap();
    }
}

/// `fmt -w` replaces the scenario it rewrites, never a link's target.
#[test]
fn fmt_never_writes_through_a_link() {
    let d = dir("safety-fmt");
    let real = scenario(&d, "real.toml", TASK);
    let before = std::fs::read(&real).unwrap();
    symlink(&real, d.join("s.toml")).unwrap();
    let o = smpsim()
        .current_dir(&d)
        .args(["fmt", "--to", "toml", "-w", "s.toml"])
        .output()
        .unwrap();
    refused(&o, "s.toml: is a symbolic link");
    assert_eq!(std::fs::read(&real).unwrap(), before);
    assert!(is_link(&d.join("s.toml")));
}

/// `calibrate -o`: a link at the output is refused before measuring; the
/// temporary names are never opened. The calibration itself runs only
/// where this host can (it needs 2 CPUs); it is skipped otherwise.
#[test]
fn calibrate_never_writes_through_a_planted_link() {
    let d = dir("safety-calibrate");
    let v = victim(&d);
    plant(&v, &d.join("prof.toml"));
    let o = smpsim()
        .current_dir(&d)
        .args(["calibrate", "-o", "prof.toml"])
        .output()
        .unwrap();
    refused(&o, "-o prof.toml: is a symbolic link");
    assert!(
        !stderr(&o).contains("calibrate:"),
        "measured before refusing: {}",
        stderr(&o)
    );
    assert_untouched(&v);
    std::fs::remove_file(d.join("prof.toml")).unwrap();
    let _host = HOST.lock().unwrap_or_else(|p| p.into_inner());
    let (o, _) = with_planted_links(&d, "prof.toml", &v, &["calibrate", "-o", "prof.toml"]);
    if !o.status.success() {
        eprintln!(
            "SKIPPED the calibration: this host cannot calibrate: {}",
            stderr(&o)
        );
        assert_untouched(&v);
        return;
    }
    assert_untouched(&v);
    let prof = std::fs::read_to_string(d.join("prof.toml")).unwrap();
    assert!(prof.contains("[costs"), "{prof}");
}

/// `host compare` without `--profile` calibrates into a private directory
/// (a random name, mode 0700) in TMPDIR, removed at the end: links
/// planted in a sticky, world-writable TMPDIR under the names earlier
/// versions used (`smpsim-profile-PID.toml`) and the shape of today's are
/// never followed. Skipped where the host cannot run `ctxswitch`.
#[test]
fn host_compare_keeps_its_profile_private() {
    use std::os::unix::fs::PermissionsExt;
    let d = dir("safety-compare");
    let v = victim(&d);
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    // `--profile-out` at a link: refused before calibrating.
    let link = d.join("kept.toml");
    plant(&v, &link);
    let o = smpsim()
        .args([
            "host",
            "compare",
            "ctxswitch",
            "--seconds",
            "0.2",
            "--profile-out",
        ])
        .arg(&link)
        .output()
        .unwrap();
    refused(&o, "--profile-out");
    refused(&o, "is a symbolic link");
    assert!(!stderr(&o).contains("calibrating"), "{}", stderr(&o));
    assert_untouched(&v);

    let list = smpsim()
        .args(["host", "list", "--format", "json"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let runnable = list
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["test"] == "ctxswitch" && t["runnable"] == true);
    if !runnable {
        eprintln!("SKIPPED host compare: this host cannot run ctxswitch (see `smpsim host list`)");
        return;
    }
    let _host = HOST.lock().unwrap_or_else(|p| p.into_inner());
    let script = r#"ln -s "$1" "$TMPDIR/smpsim-profile-$$.toml" && ln -s "$1" "$TMPDIR/smpsim-compare-$$.aaaaaa" && shift && exec "$0" "$@""#;
    let o = Command::new("bash")
        .env("TMPDIR", &tmp)
        .arg("-c")
        .arg(script)
        .arg(bin())
        .arg(&v)
        .args(["host", "compare", "ctxswitch", "--seconds", "0.2"])
        .output()
        .unwrap();
    if !o.status.success() && stderr(&o).contains("calibrat") && !stderr(&o).contains("simulated") {
        eprintln!(
            "SKIPPED host compare: calibration failed here: {}",
            stderr(&o)
        );
        assert_untouched(&v);
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    assert_untouched(&v);
    // Only the planted links are left: the private directory is gone.
    let left: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    for name in &left {
        assert!(is_link(&tmp.join(name)), "{name} left in TMPDIR");
    }
}

/// The issue's reproducer: `include = ["/proc/self/environ"]` quoted the
/// environment's first line in its parse error.
#[test]
fn an_include_outside_the_tree_is_refused_without_its_content() {
    const SECRET: &str = "SMPSIM_TEST_SECRET_4f1d";
    let d = dir("safety-include");
    let scn = d.join("scn");
    std::fs::create_dir(&scn).unwrap();
    // A file outside the tree, with a line a parse error would quote.
    std::fs::create_dir(d.join("home")).unwrap();
    std::fs::write(
        d.join("home/secret.toml"),
        format!("{SECRET} is not TOML\n"),
    )
    .unwrap();
    // A link inside the tree that leads out of it.
    symlink(d.join("home"), scn.join("lib")).unwrap();
    let no_secret = |o: &Output| {
        let all = format!("{}{}", stderr(o), String::from_utf8_lossy(&o.stdout));
        assert!(!all.contains(SECRET), "the secret was printed:\n{all}");
    };
    for (include, named) in [
        ("/proc/self/environ", "`/proc/self/environ`"),
        ("../home/secret.toml", "home/secret.toml"),
        ("lib/secret.toml", "lib/secret.toml"),
    ] {
        let p = scn.join("s.toml");
        std::fs::write(&p, format!("include = [\"{include}\"]\n{HEADER}{TASK}")).unwrap();
        for cmd in ["run", "sweep", "fmt"] {
            let mut c = smpsim();
            c.env(SECRET, SECRET).arg(cmd).arg(&p);
            if cmd == "sweep" {
                c.arg("-o").arg(d.join("r.jsonl"));
            }
            let o = c.output().unwrap();
            refused(&o, "s.toml:1:12: error: the included file ");
            refused(&o, named);
            refused(&o, "is outside the scenario's directory");
            refused(&o, "--allow-path");
            no_secret(&o);
        }
    }
    // Allowed by name, it is read (and its error quotes it: the user
    // asked for it).
    let o = smpsim()
        .arg("run")
        .arg(scn.join("s.toml"))
        .arg("--allow-path")
        .arg(d.join("home"))
        .output()
        .unwrap();
    refused(&o, SECRET);
    // An --allow-path that is not there is an error of its own.
    let o = smpsim()
        .arg("run")
        .arg(scn.join("s.toml"))
        .args(["--allow-path", "/no/such/dir"])
        .output()
        .unwrap();
    refused(&o, "--allow-path /no/such/dir: No such file");
    // reproduce refuses the case, naming the flag.
    let cases = d.join("cases");
    std::fs::create_dir(&cases).unwrap();
    std::fs::write(
        cases.join("x.toml"),
        format!("include = [\"../home/secret.toml\"]\n{HEADER}{TASK}[reproduce]\n"),
    )
    .unwrap();
    let o = smpsim()
        .arg("reproduce")
        .arg("--scenarios")
        .arg(&cases)
        .output()
        .unwrap();
    refused(&o, "is outside the scenario's directory");
    no_secret(&o);
}

#[test]
fn a_profile_outside_the_tree_is_refused_without_its_content() {
    const SECRET: &str = "SMPSIM_TEST_SECRET_9c2e";
    let d = dir("safety-profile");
    std::fs::create_dir(d.join("scn")).unwrap();
    std::fs::write(d.join("secret.toml"), format!("{SECRET} = [\n")).unwrap();
    let head = &HEADER[..HEADER.find("[machine]").unwrap()];
    let p = d.join("scn/s.toml");
    std::fs::write(
        &p,
        format!("{head}[machine]\nprofile = \"../secret.toml\"\n{TASK}"),
    )
    .unwrap();
    let o = smpsim().arg("run").arg(&p).output().unwrap();
    refused(&o, "the machine profile `");
    refused(&o, "is outside the scenario's directory");
    refused(&o, "--allow-path");
    assert!(!stderr(&o).contains(SECRET), "{}", stderr(&o));
    // And named by a `--set` over a profile inside the tree.
    let inside = include_str!("../../machine/presets/generic-x86.toml");
    std::fs::write(d.join("scn/in.toml"), inside).unwrap();
    let q = d.join("scn/q.toml");
    std::fs::write(
        &q,
        format!("{head}[machine]\nprofile = \"in.toml\"\n{TASK}"),
    )
    .unwrap();
    let o = smpsim()
        .arg("run")
        .arg(&q)
        .args(["--set", "machine.profile=../secret.toml"])
        .output()
        .unwrap();
    refused(&o, "is outside the scenario's directory");
    assert!(!stderr(&o).contains(SECRET), "{}", stderr(&o));
}

/// A generic-x86 profile on 2 CPUs, and a scenario in `d` that names it.
fn with_profile(d: &Path) -> (PathBuf, PathBuf) {
    let prof = d.join("prof.toml");
    let text = include_str!("../../machine/presets/generic-x86.toml")
        .replace("cores_per_llc = 16", "cores_per_llc = 2");
    std::fs::write(&prof, text).unwrap();
    let head = &HEADER[..HEADER.find("[machine]").unwrap()];
    let s = d.join("s.toml");
    std::fs::write(
        &s,
        format!("{head}[machine]\nprofile = \"prof.toml\"\n{TASK}"),
    )
    .unwrap();
    (s, prof)
}

/// The issue's reproducer: `run s.toml -o prof.toml` replaced the profile
/// the scenario names (exit 0; the next run failed).
#[test]
fn no_output_replaces_the_machine_profile() {
    let d = dir("safety-prof-out");
    let (s, prof) = with_profile(&d);
    let before = std::fs::read(&prof).unwrap();
    let o = smpsim()
        .current_dir(&d)
        .args(["run", "s.toml", "-o", "prof.toml"])
        .output()
        .unwrap();
    refused(&o, "-o prof.toml is the machine profile");
    let by_parent = Path::new("..")
        .join(d.file_name().unwrap())
        .join("prof.toml");
    for (flag, out) in [("--trace", Path::new("./prof.toml")), ("-o", &by_parent)] {
        let o = smpsim()
            .current_dir(&d)
            .args(["run", "s.toml", flag])
            .arg(out)
            .output()
            .unwrap();
        refused(&o, "is the machine profile");
    }
    let o = smpsim()
        .current_dir(&d)
        .args(["sweep", "s.toml", "-o", "prof.toml"])
        .output()
        .unwrap();
    refused(&o, "is the machine profile");
    // A hard link is the same file.
    std::fs::hard_link(&prof, d.join("same.toml")).unwrap();
    let o = smpsim()
        .arg("run")
        .arg(&s)
        .arg("-o")
        .arg(d.join("same.toml"))
        .output()
        .unwrap();
    refused(&o, "is the machine profile");
    // A profile only a `--set` names is caught when the output is written.
    std::fs::copy(&prof, d.join("other.toml")).unwrap();
    let other_before = std::fs::read(d.join("other.toml")).unwrap();
    let o = smpsim()
        .current_dir(&d)
        .args(["run", "s.toml", "--set", "machine.profile=other.toml"])
        .args(["-o", "other.toml"])
        .output()
        .unwrap();
    refused(&o, "other.toml: is the machine profile");
    assert_eq!(std::fs::read(d.join("other.toml")).unwrap(), other_before);
    assert_eq!(std::fs::read(&prof).unwrap(), before);
    // reproduce: refused before any case runs.
    let cases = d.join("cases");
    std::fs::create_dir(&cases).unwrap();
    let case = cases.join("slow-mutex.toml");
    std::fs::copy(common::repo("scenarios/slow-mutex.toml"), &case).unwrap();
    let case_before = std::fs::read(&case).unwrap();
    let o = smpsim()
        .arg("reproduce")
        .arg("--scenarios")
        .arg(&cases)
        .arg("-o")
        .arg(&case)
        .output()
        .unwrap();
    refused(&o, "is the scenario");
    assert_eq!(std::fs::read(&case).unwrap(), case_before);
    // And the scenario still runs.
    let o = smpsim().arg("run").arg(&s).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}
