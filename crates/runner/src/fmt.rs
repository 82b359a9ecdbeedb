//! `smpsim fmt`: a scenario's code paths rewritten in the other form
//! (code or TOML), refused if the rewrite would compile differently.

use std::path::{Path, PathBuf};

use smpsim_kernel::Spec;
use smpsim_scenario::ScenarioError;

/// The base document and every variant, compiled.
fn compiled(path: &Path, text: &str, allow: &[PathBuf]) -> Result<Vec<Spec>, ScenarioError> {
    let scn = smpsim_scenario::parse_allowing(path, text.to_string(), allow)?;
    let mut out = vec![scn.compile(None, &[])?];
    for v in scn.variant_names() {
        out.push(scn.compile(Some(v), &[])?);
    }
    Ok(out)
}

/// The scenario at `path` with its code paths in code form (`to_code`) or
/// in TOML form; an error if it does not load or the rewrite would
/// compile to something else.
pub fn rewritten(path: &Path, to_code: bool, allow_paths: &[PathBuf]) -> Result<String, String> {
    let allow = crate::output::allow_paths(allow_paths)?;
    let text = smpsim_scenario::limits::read_text(path, "scenario").map_err(|e| e.to_string())?;
    let converted = if to_code {
        smpsim_scenario::code_form(path, &text)
    } else {
        smpsim_scenario::toml_form(path, &text)
    };
    let (new, same) = converted
        .and_then(|new| {
            // The rewrite must not change what the scenario runs.
            let (before, after) = (
                compiled(path, &text, &allow)?,
                compiled(path, &new, &allow)?,
            );
            Ok((new, before == after))
        })
        .map_err(|e| e.to_string())?;
    if !same {
        return Err(format!(
            "error: {}: the rewritten scenario would compile differently; left unchanged",
            path.display()
        ));
    }
    Ok(new)
}

/// Replaces the scenario with its rewrite, atomically: a failed write
/// leaves it as it was. (The one output that may replace an input: the
/// scenario it rewrites.)
pub fn write_back(path: &Path, new: &str) -> Result<(), String> {
    smpsim_files::rewrite_input(path, new.as_bytes())
        .map_err(|e| format!("error: cannot write {e}"))
}
