//! Helpers shared by the CLI's integration tests (`mod common;` in each).

#![allow(dead_code)] // each test file uses its own subset

use std::path::PathBuf;
use std::process::Command;

/// The `smpsim` binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_smpsim"))
}

/// A command running the `smpsim` binary under test.
pub fn smpsim() -> Command {
    Command::new(bin())
}

/// A path in the repository (scenarios, docs, test data).
pub fn repo(path: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(path)
}
