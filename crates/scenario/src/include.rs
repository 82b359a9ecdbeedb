//! `include = ["lib/mm.toml"]`: libraries of `[functions]` and `[objects]`
//! shared between scenarios; `include = ["lib:futex.toml"]` names a file
//! of the library smpsim ships (scenarios/lib/, compiled in: [`crate::shipped`]).
//!
//! The included files are read once, when the scenario is loaded
//! ([`read`]), relative to the including file, and kept with it; every
//! compile merges their tables into the document before the variant and
//! the `--set` overrides, so a variant can still replace what a library
//! defines. A name defined both in the scenario and in a library is an
//! error (which one was meant is not for smpsim to guess), and errors in a
//! library point into the library file.

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::access::{Access, Refused};
use crate::document::shift_table;
use crate::error::{DResult, Diag, Location, Sources};

/// The tables a library may define.
const SECTIONS: &[&str] = &["functions", "objects"];

/// One included file.
#[derive(Clone, Debug)]
pub struct Included {
    pub path: PathBuf,
    pub text: String,
    /// Where the scenario names it.
    pub(crate) at: Range<usize>,
}

/// Reads the files the scenario's `include` names (`doc` is the
/// scenario's parsed text), those `access` permits only.
pub(crate) fn read(scenario: &Path, doc: &DeTable<'_>, access: &Access) -> DResult<Vec<Included>> {
    let Some(list) = doc.get("include") else {
        return Ok(Vec::new());
    };
    let Some(items) = list.get_ref().as_array() else {
        return Err(Diag::new(
            list.span(),
            "`include` is a list of files: include = [\"lib/mm.toml\"]",
        ));
    };
    let dir = scenario.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    if items.len() > crate::limits::MAX_INCLUDES {
        return Err(Diag::new(
            items[crate::limits::MAX_INCLUDES].span(),
            format!(
                "a scenario includes at most {} files",
                crate::limits::MAX_INCLUDES
            ),
        ));
    }
    for item in items.iter() {
        let Some(name) = item.get_ref().as_str() else {
            return Err(Diag::new(
                item.span(),
                "an included file is named by a string",
            ));
        };
        if let Some(file) = name.strip_prefix(crate::shipped::PREFIX) {
            let Some((path, text)) = crate::shipped::get(file) else {
                return Err(Diag::new(
                    item.span(),
                    format!("smpsim ships no library file `{file}`"),
                )
                .help(format!(
                    "the shipped library (scenarios/lib/): {}",
                    crate::shipped::names().join(", ")
                )));
            };
            out.push(Included {
                path: path.into(),
                text: text.to_string(),
                at: item.span(),
            });
            continue;
        }
        let path = dir.join(name);
        // Regular files of bounded size only: `/dev/zero` would never end.
        let text = access.read(&path, "included file").map_err(|r| match r {
            Refused::Outside(message) => Diag::new(item.span(), message),
            Refused::Unreadable(e) => {
                let at = match e.location {
                    Location::Text { line, column, .. } => format!(":{line}:{column}"),
                    _ => String::new(),
                };
                let d = Diag::new(
                    item.span(),
                    format!("`{}`{at}: {}", path.display(), e.message),
                );
                match !path.exists() {
                    true => d.help("included files are found relative to the including scenario"),
                    false => d,
                }
            }
        })?;
        out.push(Included {
            path,
            text,
            at: item.span(),
        });
    }
    Ok(out)
}

/// Merges the libraries' `[functions]` and `[objects]` into `root`.
pub(crate) fn merge<'t>(
    root: &mut DeTable<'t>,
    includes: &'t [Included],
    srcs: &mut Sources,
) -> DResult<()> {
    root.remove("include");
    for inc in includes {
        let base = srcs.add_text(inc.path.display().to_string(), &inc.text);
        let lib =
            DeTable::parse(&inc.text).map_err(|e| Diag::from_toml(&e, base, inc.at.clone()))?;
        let lib = shift_table(lib.into_inner(), base);
        for (key, value) in lib {
            let section = key.get_ref().as_ref();
            if !SECTIONS.contains(&section) {
                return Err(Diag::new(
                    key.span(),
                    format!(
                        "an included file defines only [functions] and [objects], not `{section}`"
                    ),
                ));
            }
            let span = value.span();
            let DeValue::Table(entries) = value.into_inner() else {
                return Err(Diag::new(span, format!("`{section}` must be a table")));
            };
            let target = match root.get_mut(section) {
                Some(t) => t,
                None => {
                    root.insert(
                        Spanned::new(key.span(), key.get_ref().clone()),
                        Spanned::new(span.clone(), DeValue::Table(DeTable::new())),
                    );
                    root.get_mut(section).expect("just inserted")
                }
            };
            let target_span = target.span();
            let DeValue::Table(target) = target.get_mut() else {
                return Err(Diag::new(
                    target_span,
                    format!("`{section}` must be a table"),
                ));
            };
            for (name, entry) in entries {
                if let Some((ours, _)) = target.get_key_value(name.get_ref().as_ref()) {
                    return Err(Diag::new(
                        ours.span(),
                        format!(
                            "`{}` is defined here and in the included `{}`",
                            name.get_ref(),
                            inc.path.display()
                        ),
                    )
                    .help(
                        "rename one of them; a variant may still replace an included definition",
                    ));
                }
                target.insert(name, entry);
            }
        }
    }
    Ok(())
}
