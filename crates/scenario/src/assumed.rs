//! Assumed values with their ranges: a setting written as
//! `{ value = V, range = [LO, HI], source = "assumed: ..." }` instead of
//! `V` (`tg_walk_cost = { value = "150ns", range = ["75ns", "300ns"],
//! source = "assumed: ..." }`). The document is unwrapped to the plain
//! value before anything reads it, so the setting means what `V` alone
//! would; the ranges are kept for bands, which vary each value over its
//! range through `--set KEY=END`. An assumed value without a range
//! ranges x0.5 - x2 (`smpsim_machine::DEFAULT_RANGE`).

use crate::document::Value;
use crate::duration::{parse_duration, MachineCosts};
use crate::error::{DResult, Diag};
use toml::de::{DeArray, DeTable, DeValue};

/// One value written with its range.
#[derive(Clone, Debug, PartialEq)]
pub struct AssumedValue {
    /// The `--set` key that reaches it (`kernel.tg_walk_cost`,
    /// `tasks.hammer.count`).
    pub key: String,
    /// The value and the range's ends as TOML text (`"150ns"`, `10`).
    pub value: String,
    pub lo: String,
    pub hi: String,
    /// The range was written (else it is the default x0.5 - x2).
    pub stated: bool,
    pub source: String,
}

/// Sections whose tables are not settings of the scenario's own: the
/// machine's costs carry their ranges in the machine's own form
/// (`{ ns, range, source }`), and `[reproduce]` is read apart.
const SKIPPED: &[&str] = &["machine", "reproduce", "variant"];

/// Replaces every assumed-value table of `root` by its value; the values
/// with their ranges, in document order, go to `out`.
pub(crate) fn unwrap(root: &mut DeTable<'_>, out: &mut Vec<AssumedValue>) -> DResult<()> {
    let keys: Vec<String> = root.keys().map(|k| k.get_ref().to_string()).collect();
    for key in keys {
        if SKIPPED.contains(&key.as_str()) {
            continue;
        }
        let v = root.get_mut(key.as_str()).expect("listed");
        walk(v, &key, out)?;
    }
    Ok(())
}

fn walk(v: &mut Value<'_>, path: &str, out: &mut Vec<AssumedValue>) -> DResult<()> {
    if let Some(found) = assumed_table(v, path)? {
        out.push(found.0);
        *v = found.1;
        return Ok(());
    }
    match v.get_mut() {
        DeValue::Table(t) => {
            let keys: Vec<String> = t.keys().map(|k| k.get_ref().to_string()).collect();
            for key in keys {
                let item = t.get_mut(key.as_str()).expect("listed");
                walk(item, &format!("{path}.{key}"), out)?;
            }
        }
        DeValue::Array(items) => walk_array(items, path, out)?,
        _ => {}
    }
    Ok(())
}

/// Items of `tasks` and `cgroup` are addressed by their `name` (as
/// `--set` addresses them); a value inside another array has no key.
fn walk_array(items: &mut DeArray<'_>, path: &str, out: &mut Vec<AssumedValue>) -> DResult<()> {
    for item in items.iter_mut() {
        let name = item
            .get_ref()
            .as_table()
            .and_then(|t| t.get("name"))
            .and_then(|n| n.get_ref().as_str())
            .map(str::to_string);
        match (&name, item.get_mut()) {
            (Some(name), DeValue::Table(t)) => {
                let keys: Vec<String> = t.keys().map(|k| k.get_ref().to_string()).collect();
                for key in keys {
                    let v = t.get_mut(key.as_str()).expect("listed");
                    walk(v, &format!("{path}.{name}.{key}"), out)?;
                }
            }
            _ => {
                if let Some(bad) = find_assumed(item) {
                    return Err(Diag::new(
                        bad,
                        "an assumed value with a range must be a setting `--set` can reach: in a table, or in a named item of `tasks` or `cgroup`",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The span of an assumed-value table anywhere inside `v`.
fn find_assumed(v: &Value<'_>) -> Option<std::ops::Range<usize>> {
    match v.get_ref() {
        DeValue::Table(t) if t.get("value").is_some() && t.get("source").is_some() => {
            Some(v.span())
        }
        DeValue::Table(t) => t.iter().find_map(|(_, v)| find_assumed(v)),
        DeValue::Array(a) => a.iter().find_map(find_assumed),
        _ => None,
    }
}

/// A number or a duration, to order a range's ends.
fn magnitude(v: &Value<'_>) -> Option<f64> {
    match v.get_ref() {
        DeValue::Integer(i) => i
            .as_str()
            .replace('_', "")
            .parse::<i64>()
            .ok()
            .map(|i| i as f64),
        DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().ok(),
        DeValue::String(s) => parse_duration(s, &MachineCosts::default())
            .ok()
            .map(|ns| ns as f64),
        _ => None,
    }
}

/// TOML text of a value of the same kind as `like`, at `x`.
fn same_kind(like: &Value<'_>, x: f64) -> String {
    match like.get_ref() {
        DeValue::Integer(_) => format!("{}", x.round() as i64),
        DeValue::Float(_) => format!("{x:?}"),
        _ => format!("\"{}ns\"", x.round() as u64),
    }
}

fn text_of(v: &Value<'_>) -> String {
    match v.get_ref() {
        DeValue::Integer(i) => i.as_str().to_string(),
        DeValue::Float(f) => f.as_str().to_string(),
        DeValue::String(s) => format!("\"{s}\""),
        other => other.type_str().to_string(),
    }
}

/// If `v` is an assumed-value table, the value it stands for (with the
/// table's span) and what it says of its range.
fn assumed_table<'a>(v: &Value<'a>, path: &str) -> DResult<Option<(AssumedValue, Value<'a>)>> {
    let DeValue::Table(t) = v.get_ref() else {
        return Ok(None);
    };
    let (Some(value), source) = (t.get("value"), t.get("source")) else {
        return Ok(None);
    };
    let Some(source) = source else {
        if let Some(range) = t.get("range") {
            return Err(Diag::new(
                range.span(),
                "an assumed value with a range needs its `source` (\"assumed: why\")",
            ));
        }
        return Ok(None);
    };
    if let Some((k, _)) = t
        .iter()
        .find(|(k, _)| !["value", "range", "source"].contains(&k.get_ref().as_ref()))
    {
        return Err(Diag::new(
            k.span(),
            format!(
                "unknown key `{}` in an assumed value: it has `value`, `range` and `source`",
                k.get_ref()
            ),
        ));
    }
    let Some(source_text) = source.get_ref().as_str() else {
        return Err(Diag::new(source.span(), "`source` must be a string"));
    };
    let Some(centre) = magnitude(value) else {
        return Err(Diag::new(
            value.span(),
            "an assumed value with a range is a number or a duration (\"150ns\")",
        ));
    };
    let (lo, hi, stated) = match t.get("range") {
        Some(range) => {
            let ends = range.get_ref().as_array().filter(|a| a.len() == 2);
            let Some(ends) = ends else {
                return Err(Diag::new(
                    range.span(),
                    "`range` is two values, `[LO, HI]`, of the kind of `value`",
                ));
            };
            let (lo, hi) = (&ends[0], &ends[1]);
            for end in [lo, hi] {
                let kind_ok = std::mem::discriminant(end.get_ref())
                    == std::mem::discriminant(value.get_ref());
                if !kind_ok || magnitude(end).is_none() {
                    return Err(Diag::new(
                        end.span(),
                        format!(
                            "a range's end is of the kind of `value` ({})",
                            value.get_ref().type_str()
                        ),
                    ));
                }
            }
            let (l, h) = (magnitude(lo).unwrap(), magnitude(hi).unwrap());
            if !(l >= 0.0 && l <= centre && centre <= h) {
                return Err(Diag::new(
                    range.span(),
                    format!(
                        "the range must hold the value: [LO, HI] with 0 <= LO <= {} <= HI",
                        text_of(value)
                    ),
                ));
            }
            (text_of(lo), text_of(hi), true)
        }
        None => {
            let (a, b) = smpsim_machine::DEFAULT_RANGE;
            (
                same_kind(value, centre * a),
                same_kind(value, centre * b),
                false,
            )
        }
    };
    let found = AssumedValue {
        key: path.to_string(),
        value: text_of(value),
        lo,
        hi,
        stated,
        source: source_text.to_string(),
    };
    // The value keeps its own span: what is wrong with it is shown there.
    Ok(Some((found, value.clone())))
}
