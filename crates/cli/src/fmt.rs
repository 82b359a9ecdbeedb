//! `smpsim fmt`: a scenario's code paths in the other form.

use crate::cli::{CodeForm, FmtArgs};

/// The base document and every variant, compiled.
fn compiled(
    path: &std::path::Path,
    text: &str,
    allow: &[std::path::PathBuf],
) -> Result<Vec<smpsim_kernel::Spec>, smpsim_scenario::ScenarioError> {
    let scn = smpsim_scenario::parse_allowing(path, text.to_string(), allow)?;
    let mut out = vec![scn.compile(None, &[])?];
    for v in scn.variant_names() {
        out.push(scn.compile(Some(v), &[])?);
    }
    Ok(out)
}

pub fn main(args: FmtArgs) -> i32 {
    let path = &args.scenario;
    let allow = match crate::output::allow_paths(&args.allow_paths) {
        Ok(a) => a,
        Err(e) => return crate::output::fail(e),
    };
    let text = match smpsim_scenario::limits::read_text(path, "scenario") {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let converted = match args.to {
        CodeForm::Code => smpsim_scenario::code_form(path, &text),
        CodeForm::Toml => smpsim_scenario::toml_form(path, &text),
    };
    let new = match converted.and_then(|new| {
        // The rewrite must not change what the scenario runs.
        let (before, after) = (
            compiled(path, &text, &allow)?,
            compiled(path, &new, &allow)?,
        );
        Ok((new, before == after))
    }) {
        Ok((new, true)) => new,
        Ok((_, false)) => {
            eprintln!(
                "error: {}: the rewritten scenario would compile differently; left unchanged",
                path.display()
            );
            return 2;
        }
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    if !args.write {
        print!("{new}");
        return 0;
    }
    // Atomically: a failed write leaves the scenario as it was. (The one
    // output that may replace an input: the scenario it rewrites.)
    if let Err(e) = smpsim_files::rewrite_input(path, new.as_bytes()) {
        eprintln!("error: cannot write {e}");
        return 2;
    }
    0
}
