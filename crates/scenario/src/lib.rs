//! Scenario files: what a simulation runs, written in TOML.
//!
//! A scenario names a machine, kernel knobs, kernel objects, cgroups and
//! groups of tasks with the code they run. [`load`] reads and checks a file,
//! including every `[variant.*]`; [`Scenario::compile`] merges a variant and
//! `--set` overrides over the base document and lowers it to the kernel's
//! [`Spec`]. Every error points at the place in the file (or the `--set`
//! option) it comes from. The format is described in
//! `docs/scenario-format.md`.

mod access;
mod assumed;
mod codepath;
mod compile;
mod document;
mod duration;
mod error;
mod expr;
mod include;
pub mod limits;
mod machine;
mod object_type;
mod objects;
mod ops;
mod raw;
mod reproduce;
pub mod shipped;

use std::path::{Path, PathBuf};

use smpsim_kernel::Spec;
use toml::de::DeTable;

pub use access::Access;
pub use assumed::AssumedValue;
pub use codepath::{code_form, toml_form};
pub use error::{Location, ScenarioError};
pub use include::Included;
pub use reproduce::{MetricDef, PassRule, Reproduce};

use error::{Diag, Sources};

/// Every op a scenario's code can use, in the order errors list them (the
/// op registry's).
pub fn op_names() -> impl Iterator<Item = &'static str> {
    ops::signatures().map(|s| s.name)
}

/// A loaded scenario file, checked in its base form and in every variant.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: PathBuf,
    pub text: String,
    pub name: String,
    pub description: String,
    /// The `[variant.*]` tables, in file order.
    pub variants: Vec<VariantInfo>,
    pub reproduce: Option<Reproduce>,
    /// The files `include` names, read when the scenario was loaded.
    pub includes: Vec<Included>,
    /// The machine profiles the base and the variants read.
    pub profiles: Vec<PathBuf>,
    /// Where the scenario may read files (its includes and profiles).
    access: Access,
    /// What is legal but likely not meant (a variant's table that leaves
    /// keys of the base's out, which the merge keeps): for the commands to
    /// print.
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VariantInfo {
    pub name: String,
    pub description: String,
}

/// Reads and checks a scenario file. It may read (include, or take a
/// machine profile from) files in its own directory tree only.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    load_allowing(path, &[])
}

/// [`load`], the scenario also reading under the `allowed` paths (files
/// or directories the user named with `--allow-path`).
pub fn load_allowing(path: &Path, allowed: &[PathBuf]) -> Result<Scenario, ScenarioError> {
    let text = limits::read_text(path, "scenario")?;
    parse_allowing(path, text, allowed)
}

/// Checks a scenario given as text; `path` names it in messages and
/// anchors relative include and machine profile paths (its directory
/// tree is what the scenario may read).
pub fn parse(path: &Path, text: String) -> Result<Scenario, ScenarioError> {
    parse_allowing(path, text, &[])
}

/// [`parse`], the scenario also reading under the `allowed` paths.
pub fn parse_allowing(
    path: &Path,
    text: String,
    allowed: &[PathBuf],
) -> Result<Scenario, ScenarioError> {
    let srcs = Sources::new(path, &text);
    let access = Access::new(path, allowed);
    let header = read_header(path, &text, &access).map_err(|d| srcs.render(d))?;
    let mut scn = Scenario {
        path: path.to_path_buf(),
        text: String::new(),
        name: String::new(),
        description: String::new(),
        variants: header.variants,
        reproduce: None,
        includes: header.includes,
        profiles: Vec::new(),
        access,
        warnings: header.warnings,
    };
    scn.text = text;
    let mut profiles = scn.compile_reading(None, &[])?.1;
    // The base compiled, so `[scenario]` is well-formed.
    let (name, description, reproduce) = read_details(&scn.text).map_err(|d| srcs.render(d))?;
    scn.name = name;
    scn.description = description;
    scn.reproduce = reproduce;
    for v in scn.variants.clone() {
        profiles.extend(scn.compile_reading(Some(&v.name), &[])?.1);
    }
    profiles.sort();
    profiles.dedup();
    scn.profiles = profiles;
    Ok(scn)
}

struct Header {
    variants: Vec<VariantInfo>,
    includes: Vec<Included>,
    warnings: Vec<String>,
}

/// The variants a scenario declares and the files it includes.
fn read_header(path: &Path, text: &str, access: &Access) -> Result<Header, Diag> {
    let doc = DeTable::parse(text).map_err(|e| Diag::from_parse(&e, text, 0))?;
    let decls = document::variant_decls(doc.get_ref().get("variant"))?;
    let mut warnings = Vec::new();
    if let Some(all) = doc
        .get_ref()
        .get("variant")
        .and_then(|v| v.get_ref().as_table())
    {
        for (name, body) in all.iter() {
            if let Some(body) = body.get_ref().as_table() {
                warnings.extend(document::keys_left_out(doc.get_ref(), body, name.get_ref()));
            }
        }
    }
    Ok(Header {
        warnings,
        variants: decls
            .into_iter()
            .map(|d| VariantInfo {
                name: d.name,
                description: d.description,
            })
            .collect(),
        includes: include::read(path, doc.get_ref(), access)?,
    })
}

fn read_details(text: &str) -> Result<(String, String, Option<Reproduce>), Diag> {
    let mut doc = DeTable::parse(text)
        .map_err(|e| Diag::from_toml(&e, 0, 0..0))?
        .into_inner();
    let sc = doc.get("scenario").and_then(|s| s.get_ref().as_table());
    let field = |k: &str| {
        sc.and_then(|t| t.get(k))
            .and_then(|v| v.get_ref().as_str())
            .unwrap_or_default()
            .to_string()
    };
    let (name, description) = (field("name"), field("description"));
    let reproduce = match doc.remove("reproduce") {
        None => None,
        Some(v) => Some(reproduce::parse(v, text, &name)?),
    };
    Ok((name, description, reproduce))
}

impl Scenario {
    /// Compiles the base document (`variant = None`) or a variant, with
    /// `--set KEY=VALUE` overrides applied last.
    pub fn compile(
        &self,
        variant: Option<&str>,
        sets: &[(String, String)],
    ) -> Result<Spec, ScenarioError> {
        self.compile_reading(variant, sets).map(|(spec, _)| spec)
    }

    /// [`Scenario::compile`], with the files it read (machine profiles).
    fn compile_reading(
        &self,
        variant: Option<&str>,
        sets: &[(String, String)],
    ) -> Result<(Spec, Vec<PathBuf>), ScenarioError> {
        if let Some(name) = variant {
            if !self.variants.iter().any(|v| v.name == name) {
                let mut e = ScenarioError::file(&self.path, format!("unknown variant `{name}`"));
                e.help = Some(format!(
                    "available variants: {}",
                    error::list(self.variant_names())
                ));
                return Err(e);
            }
        }
        let mut srcs = Sources::new(&self.path, &self.text);
        let spec = compile::compile(self, variant, sets, &mut srcs).map_err(|d| srcs.render(d))?;
        Ok((spec, srcs.files_read))
    }

    /// The task groups whose `cpus` the scenario (with `variant` and
    /// `sets`) gives explicitly: each group's name and its `cpus` as
    /// written. `sweep --cpus` keeps these placements.
    pub fn explicit_cpus(
        &self,
        variant: Option<&str>,
        sets: &[(String, String)],
    ) -> Result<Vec<(String, String)>, ScenarioError> {
        let mut srcs = Sources::new(&self.path, &self.text);
        compile::explicit_cpus(self, variant, sets, &mut srcs).map_err(|d| srcs.render(d))
    }

    /// The values of the merged document (`variant` with `sets`) written
    /// as `{ value, range, source }`, each with the `--set` key that
    /// reaches it and its range (stated, or the default x0.5 - x2).
    pub fn assumed_values(
        &self,
        variant: Option<&str>,
        sets: &[(String, String)],
    ) -> Result<Vec<AssumedValue>, ScenarioError> {
        let mut srcs = Sources::new(&self.path, &self.text);
        compile::assumed_values(self, variant, sets, &mut srcs).map_err(|d| srcs.render(d))
    }

    /// Names of the variants, in file order.
    pub fn variant_names(&self) -> impl Iterator<Item = &str> {
        self.variants.iter().map(|v| v.name.as_str())
    }
}
