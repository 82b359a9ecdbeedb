//! Records the commit the binary is built from (`SMPSIM_COMMIT`), for the
//! results and plots to say where they come from: `unknown` outside a git
//! checkout.
//!
//! Also finds a Chromium for the HTML report's browser test: its path as
//! `SMPSIM_TEST_CHROMIUM`, or, without one, the `smpsim_no_chromium` cfg
//! that makes the test ignored (reported as skipped, not as passed).

use std::path::Path;
use std::process::Command;

/// `SMPSIM_CHROMIUM`, else `chromium` or `chromium-browser` on PATH.
fn chromium() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("SMPSIM_CHROMIUM") {
        return Some(p.into());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|p| p.is_file())
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(smpsim_no_chromium)");
    println!("cargo:rerun-if-env-changed=SMPSIM_CHROMIUM");
    println!("cargo:rerun-if-env-changed=PATH");
    match chromium() {
        Some(p) => println!("cargo:rustc-env=SMPSIM_TEST_CHROMIUM={}", p.display()),
        None => println!("cargo:rustc-cfg=smpsim_no_chromium"),
    }
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SMPSIM_COMMIT={commit}");
    // Rebuilt when HEAD moves (only paths that exist: a missing one would
    // rebuild every time).
    for p in [
        "../../.git/HEAD",
        "../../.git/refs/heads",
        "../../.git/packed-refs",
    ] {
        if Path::new(p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
}
