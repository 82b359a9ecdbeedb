//! Error texts from the edges of the input (topology size, invalid
//! UTF-8, TOML types and nesting, duration syntax): each says where it
//! is, names what it is about and what was expected.

use std::path::Path;

use smpsim_scenario::{parse, Location, ScenarioError};

const HEADER: &str = "[scenario]\nname = \"c\"\nduration = \"1ms\"\n[machine]\npreset = \"generic-x86\"\n[machine.topology]\ncores_per_llc = 1\n";
const TASK: &str = "[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''work(1us);'''\n";

fn err(text: String) -> ScenarioError {
    parse(Path::new("t.toml"), text).expect_err("must be refused")
}

fn starts(e: &ScenarioError, want: &str) {
    let s = e.to_string();
    assert!(
        s.starts_with(want),
        "expected `{want}` at the start of:\n{s}"
    );
}

#[test]
fn too_many_cpus_is_located_at_the_key_that_set_it() {
    let e = err(format!("{HEADER}{TASK}").replace("cores_per_llc = 1", "cores_per_llc = 1048577"));
    starts(
        &e,
        "t.toml:7:17: error: invalid machine topology: more than 1,048,576 CPUs is not supported",
    );
    // By `--set`: the option that asked for it.
    let scn = parse(Path::new("t.toml"), format!("{HEADER}{TASK}")).unwrap();
    let e = scn
        .compile(
            None,
            &[("machine.topology.cores_per_llc".into(), "1048577".into())],
        )
        .unwrap_err();
    assert!(
        matches!(&e.location, Location::Set { key, .. } if key == "machine.topology.cores_per_llc"),
        "{e}"
    );
}

#[test]
fn invalid_utf8_has_line_column_and_offset() {
    let dir = std::env::temp_dir().join(format!("smpsim-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("u.toml");
    let mut bytes = format!("{HEADER}{TASK}").into_bytes();
    bytes.extend_from_slice(b"# caf\xe9\n");
    std::fs::write(&p, &bytes).unwrap();
    let e = smpsim_scenario::load(&p).unwrap_err();
    assert_eq!(e.line_col(), Some((12, 6)), "{e}");
    assert!(
        e.message
            .contains(&format!("invalid UTF-8 at byte offset {}", bytes.len() - 2)),
        "{e}"
    );
}

#[test]
fn toml_messages_name_the_key_and_what_it_expects() {
    let e = err(format!(
        "{HEADER}[[tasks]]\nname = \"t\"\nname = \"u\"\ncount = 1\ncode = '''work(1us);'''\n"
    ));
    starts(&e, "t.toml:10:1: error: duplicate key `name`");
    let e = err(format!(
        "{HEADER}[[tasks]]\nname = \"t\"\nper_cpu = true\ncode = '''work(1us);'''\n"
    ));
    starts(
        &e,
        "t.toml:10:11: error: `per_cpu` expects an integer, not boolean `true`",
    );
    let e = err(format!("{HEADER}[kernel]\nhz = \"250\"\n{TASK}"));
    starts(
        &e,
        "t.toml:9:6: error: `hz` expects an integer, not string \"250\"",
    );
    let e = err(format!(
        "{HEADER}x = {}{}\n{TASK}",
        "[".repeat(200),
        "]".repeat(200)
    ));
    assert!(
        e.message.contains(
            "arrays and inline tables nest too deeply (the TOML parser allows 80 levels)"
        ),
        "{e}"
    );
}

#[test]
fn durations_take_no_arithmetic() {
    let e = err(format!(
        "{HEADER}[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''work(15 * 40ns);'''\n"
    ));
    starts(
        &e,
        "t.toml:11:19: error: a duration takes no arithmetic (`*`)",
    );
}
