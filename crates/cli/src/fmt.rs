//! `smpsim fmt`: a scenario's code paths in the other form.

use crate::cli::{CodeForm, FmtArgs};

/// The base document and every variant, compiled.
fn compiled(
    path: &std::path::Path,
    text: &str,
) -> Result<Vec<smpsim_kernel::Spec>, smpsim_scenario::ScenarioError> {
    let scn = smpsim_scenario::parse(path, text.to_string())?;
    let mut out = vec![scn.compile(None, &[])?];
    for v in scn.variant_names() {
        out.push(scn.compile(Some(v), &[])?);
    }
    Ok(out)
}

pub fn main(args: FmtArgs) -> i32 {
    let path = &args.scenario;
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
        let (before, after) = (compiled(path, &text)?, compiled(path, &new)?);
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
    // Atomically: a failed write leaves the scenario as it was.
    if let Err(e) = crate::output::emit(&new, Some(path)) {
        eprintln!("error: cannot write {e}");
        return 2;
    }
    0
}
