//! `[machine]`: a preset or profile with overrides merged over it.

use std::path::Path;

use serde::Deserialize;
use smpsim_machine::Machine;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::access::{Access, Refused};
use crate::document::{merge, shift_table, Value};
use crate::error::{list, DResult, Diag, Sources};

const TOPOLOGY_FIELDS: &[&str] = &[
    "sockets",
    "numa_nodes_per_socket",
    "llcs_per_node",
    "cores_per_llc",
    "threads_per_core",
];

/// Builds the machine from the `[machine]` value of the merged document.
pub(crate) fn build(
    section: Option<Value<'_>>,
    doc_span: std::ops::Range<usize>,
    dir: &Path,
    access: &Access,
    srcs: &mut Sources,
) -> DResult<Machine> {
    let Some(section) = section else {
        return Err(Diag::new(
            doc_span.start..doc_span.start,
            "missing `[machine]` section",
        )
        .help(format!(
            "add `[machine]` with `preset = \"...\"` (one of {}) or `profile = \"path.toml\"`",
            list(smpsim_machine::preset_names())
        )));
    };
    let span = section.span();
    let DeValue::Table(mut over) = section.into_inner() else {
        return Err(Diag::new(span, "`machine` must be a table"));
    };
    let preset = over.remove("preset");
    let profile = over.remove("profile");
    let string = |v: &Value<'_>| -> DResult<String> {
        v.get_ref()
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| Diag::new(v.span(), "expected a string"))
    };
    let profile_text;
    let (base_text, base): (&str, usize) = match (&preset, &profile) {
        (Some(_), Some(p)) => {
            return Err(Diag::new(
                p.span(),
                "`machine` has both `preset` and `profile`; give exactly one",
            ));
        }
        (None, None) => {
            return Err(Diag::new(
                span,
                "`machine` needs `preset = \"NAME\"` or `profile = \"PATH\"`",
            )
            .help(format!("presets: {}", list(smpsim_machine::preset_names()))));
        }
        (Some(p), None) => {
            let name = string(p)?;
            let Some(text) = smpsim_machine::preset_source(&name) else {
                return Err(
                    Diag::new(p.span(), format!("unknown machine preset `{name}`")).help(format!(
                        "known presets: {}",
                        list(smpsim_machine::preset_names())
                    )),
                );
            };
            (text, srcs.add_text(format!("<preset {name}>"), text))
        }
        (None, Some(p)) => {
            let rel = string(p)?;
            let path = dir.join(&rel);
            // Bounded, regular files only, as scenarios are, and only
            // where the scenario may read.
            profile_text = access.read(&path, "machine profile").map_err(|r| match r {
                Refused::Outside(message) => Diag::new(p.span(), message),
                Refused::Unreadable(e) => {
                    let at = match e.location {
                        crate::Location::Text { line, column, .. } => format!(":{line}:{column}"),
                        _ => String::new(),
                    };
                    Diag::new(p.span(), format!("`{}`{at}: {}", path.display(), e.message))
                }
            })?;
            srcs.files_read.push(path.clone());
            let base = srcs.add_text(path.display().to_string(), &profile_text);
            (profile_text.as_str(), base)
        }
    };
    let parsed = DeTable::parse(base_text).map_err(|e| Diag::from_toml(&e, base, base..base))?;
    let root_span = parsed.span();
    let mut table = shift_table(parsed.into_inner(), base);
    drop_stale_ranges(&mut table, &over);
    merge(&mut table, over, "machine")?;
    let keep = table.clone();
    let machine = Machine::deserialize(toml::de::Deserializer::from(Spanned::new(
        root_span.start + base..root_span.end + base,
        table,
    )))
    .map_err(|e| Diag::from_toml(&e, 0, span.clone()))?;
    if let Err(msg) = machine.validate() {
        // `PATH = VALUE: why`: at the key the merged description has at
        // PATH, which is the scenario's or a `--set` when they gave it
        // (`[machine.tlb] count_max = 0`), not the preset's table.
        if let Some(at) = key_at(&keep, &msg) {
            let what = if msg.starts_with("costs.") || msg.contains(".ns = ") {
                "cost"
            } else if msg.starts_with("topology.") {
                "topology"
            } else {
                "value"
            };
            return Err(Diag::new(at, format!("invalid machine {what}: {msg}")));
        }
        if let Some(cost) = msg.strip_prefix("costs.") {
            // `costs.NAME.ns = ...` or `costs.line_transfer.FIELD.ns = ...`:
            // point at the cost's own table.
            let name = cost.split(".ns").next().unwrap_or("");
            let path: Vec<&str> = name.split('.').chain(["ns"]).collect();
            let mut at = keep.get("costs");
            for key in &path {
                match at.and_then(|v| v.get_ref().as_table()?.get(*key)) {
                    Some(v) => at = Some(v),
                    None => break,
                }
            }
            let at = at.map_or(span, |v| v.span());
            return Err(Diag::new(at, format!("invalid machine cost: {msg}")));
        }
        let topo = keep.get("topology");
        if let Some(at) = capacity_span(topo, &msg) {
            return Err(Diag::new(at, format!("invalid machine topology: {msg}")));
        }
        let field = |f: &str| topo?.get_ref().as_table()?.get(f);
        // A limit over the whole topology (too many CPUs) names no field:
        // point at the largest count the scenario or a `--set` gave, not
        // at the preset it overrides.
        let preset_region = base..base + base_text.len();
        let overridden = TOPOLOGY_FIELDS
            .iter()
            .filter_map(|f| field(f))
            .filter(|v| !preset_region.contains(&v.span().start))
            .max_by_key(|v| {
                v.get_ref()
                    .as_integer()
                    .and_then(|i| i.as_str().parse::<i128>().ok())
                    .unwrap_or(i128::MIN)
            });
        let at = TOPOLOGY_FIELDS
            .iter()
            .find(|f| msg.contains(&format!("topology.{f} ")))
            .and_then(|f| field(f))
            .or(overridden)
            .or(topo)
            .map_or(span, |v| v.span());
        return Err(Diag::new(at, format!("invalid machine topology: {msg}")));
    }
    Ok(machine)
}

/// A cost's `range` speaks of the value it was written with: where the
/// overrides give a cost a new `ns` and no `range`, the base's range is
/// dropped (an assumed cost then ranges over the default).
fn drop_stale_ranges(table: &mut DeTable<'_>, over: &DeTable<'_>) {
    fn walk(base: &mut DeTable<'_>, over: &DeTable<'_>) {
        for (key, v) in over.iter() {
            let Some(o) = v.get_ref().as_table() else {
                continue;
            };
            let Some(b) = base.get_mut(key.get_ref().as_ref()) else {
                continue;
            };
            let DeValue::Table(b) = b.get_mut() else {
                continue;
            };
            if o.get("ns").is_some() && o.get("range").is_none() {
                b.remove("range");
            }
            walk(b, o);
        }
    }
    walk(table, over);
}

/// The span of the value a validation message names (`tlb.count_max = 0:
/// ...`, `costs.ipi_send.ns = NaN: ...`), when its whole path is in the
/// merged description. The broadcast TLB's costs are listed with the
/// machine's costs (`costs.tlb.invlpgb.ns`) but live in `[tlb]`.
fn key_at(table: &DeTable<'_>, msg: &str) -> Option<std::ops::Range<usize>> {
    let (path, _) = msg.split_once(" = ")?;
    if path.contains(char::is_whitespace) || path.contains('[') {
        return None;
    }
    let path = path
        .strip_prefix("costs.tlb.")
        .map_or_else(|| path.to_string(), |rest| format!("tlb.{rest}"));
    let mut parts = path.split('.');
    let mut at = table.get(parts.next()?)?;
    for key in parts {
        at = at.get_ref().as_table()?.get(key)?;
    }
    Some(at.span())
}

/// Where a core type's or the SMT co-run factor's error points: the value
/// it names (`topology.core_types[i].capacity`, `.cpus`,
/// `topology.smt_corun.factor`).
fn capacity_span(topo: Option<&Value<'_>>, msg: &str) -> Option<std::ops::Range<usize>> {
    let table = topo?.get_ref().as_table()?;
    if let Some(rest) = msg.strip_prefix("topology.core_types[") {
        let (i, rest) = rest.split_once(']')?;
        let i: usize = i.parse().ok()?;
        let field = if rest.starts_with(".cpus") {
            "cpus"
        } else {
            "capacity"
        };
        let item = table.get("core_types")?.get_ref().as_array()?.get(i)?;
        let v = item.get_ref().as_table()?.get(field)?;
        return Some(v.span());
    }
    if msg.starts_with("topology.smt_corun") {
        let sc = table.get("smt_corun")?;
        return Some(
            sc.get_ref()
                .as_table()
                .and_then(|t| t.get("factor"))
                .map_or(sc.span(), |v| v.span()),
        );
    }
    None
}
