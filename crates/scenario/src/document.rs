//! The document as a TOML tree: variants and `--set` overrides merged over
//! the base, with every value keeping the span it was written at.

use std::borrow::Cow;
use std::ops::Range;

use toml::de::{DeArray, DeTable, DeValue};
use toml::Spanned;

use crate::error::{list, DResult, Diag};

pub(crate) type Value<'a> = Spanned<DeValue<'a>>;

/// Arrays of tables whose items are matched by `name` when merging.
pub(crate) const KEYED_ARRAYS: &[&str] = &["tasks", "cgroup", "reproduce.metric"];

/// Moves every span in a value by `by` bytes (into its region of the
/// virtual text, see [`crate::error::Sources`]).
pub(crate) fn shift_value(v: Value<'_>, by: usize) -> Value<'_> {
    let span = v.span();
    let inner = match v.into_inner() {
        DeValue::Table(t) => DeValue::Table(shift_table(t, by)),
        DeValue::Array(a) => {
            let mut out = DeArray::new();
            for item in a.iter().cloned() {
                out.push(shift_value(item, by));
            }
            DeValue::Array(out)
        }
        other => other,
    };
    Spanned::new(span.start + by..span.end + by, inner)
}

pub(crate) fn shift_table(t: DeTable<'_>, by: usize) -> DeTable<'_> {
    if by == 0 {
        return t;
    }
    let mut out = DeTable::new();
    for (k, v) in t {
        let ks = k.span();
        out.insert(
            Spanned::new(ks.start + by..ks.end + by, k.into_inner()),
            shift_value(v, by),
        );
    }
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Whether `v` is `{ unset = true }`: what a variant or `--set` writes
/// to remove a key the base sets (a merge cannot leave a key out).
pub(crate) fn is_unset(v: &Value<'_>) -> bool {
    v.get_ref().as_table().is_some_and(|t| {
        t.len() == 1 && t.get("unset").and_then(|u| u.get_ref().as_bool()) == Some(true)
    })
}

/// The error for `{ unset = true }` where there is nothing to remove.
fn nothing_to_unset(span: Range<usize>, full: &str) -> Diag {
    Diag::new(
        span,
        format!("`{full} = {{ unset = true }}`: there is no `{full}` to remove"),
    )
    .help("`{ unset = true }` removes a key the base document sets; check the key's name")
}

/// Deep-merges `over` into `base`: tables merge recursively, items of
/// [`KEYED_ARRAYS`] merge by `name`, anything else is replaced; a value
/// `{ unset = true }` removes the key.
pub(crate) fn merge<'a>(base: &mut DeTable<'a>, over: DeTable<'a>, path: &str) -> DResult<()> {
    for (k, v) in over {
        let full = join(path, k.get_ref());
        if is_unset(&v) {
            if base.remove(k.get_ref().as_ref()).is_none() {
                return Err(nothing_to_unset(v.span(), &full));
            }
            continue;
        }
        let Some(existing) = base.get_mut(k.get_ref().as_ref()) else {
            base.insert(k, v);
            continue;
        };
        let keyed = KEYED_ARRAYS.contains(&full.as_str());
        match (existing.get_mut(), v.get_ref()) {
            (DeValue::Table(_), DeValue::Table(_)) => {
                let (DeValue::Table(b), DeValue::Table(o)) = (existing.get_mut(), v.into_inner())
                else {
                    unreachable!()
                };
                merge(b, o, &full)?;
            }
            (DeValue::Array(_), DeValue::Array(_)) if keyed => {
                let (DeValue::Array(b), DeValue::Array(o)) = (existing.get_mut(), v.into_inner())
                else {
                    unreachable!()
                };
                merge_keyed(b, o, &full)?;
            }
            (DeValue::Array(_), DeValue::Table(_)) if keyed => {
                // A dotted key (`tasks.worker.vars.every = 4`) names the
                // entry as `--set` does: by its `name`.
                let (DeValue::Array(b), DeValue::Table(o)) = (existing.get_mut(), v.into_inner())
                else {
                    unreachable!()
                };
                merge_named(b, o, &full)?;
            }
            _ => *existing = v,
        }
    }
    Ok(())
}

fn item_name<'t>(t: &'t DeTable<'_>) -> Option<&'t str> {
    t.get("name").and_then(|n| n.get_ref().as_str())
}

/// The entry of keyed array `path` named `name`, or an error at `span`
/// listing the names there are.
fn entry_named<'b, 'a>(
    base: &'b mut DeArray<'a>,
    name: &str,
    span: std::ops::Range<usize>,
    path: &str,
) -> DResult<&'b mut DeTable<'a>> {
    let known: Vec<String> = base
        .iter()
        .filter_map(|v| v.get_ref().as_table().and_then(item_name))
        .map(str::to_string)
        .collect();
    let target = base.iter_mut().find_map(|v| match v.get_mut() {
        DeValue::Table(t) if item_name(t) == Some(name) => Some(t),
        _ => None,
    });
    target.ok_or_else(|| {
        Diag::new(span, format!("there is no `{path}` entry named `{name}`"))
            .help(format!("known: {}", list(&known)))
    })
}

fn merge_keyed<'a>(base: &mut DeArray<'a>, over: DeArray<'a>, path: &str) -> DResult<()> {
    for item in over.iter().cloned() {
        let item_span = item.span();
        let DeValue::Table(o) = item.into_inner() else {
            return Err(Diag::new(
                item_span,
                format!("expected a table in `{path}`"),
            ));
        };
        let Some(name_v) = o.get("name") else {
            return Err(Diag::new(
                item_span,
                format!("an override of `{path}` needs `name` to say which entry it changes"),
            )
            .help(format!(
                "write `[[variant.NAME.{path}]]` with `name = \"...\"` and the fields to change"
            )));
        };
        let Some(name) = name_v.get_ref().as_str().map(str::to_string) else {
            return Err(Diag::new(name_v.span(), "expected a string"));
        };
        let name_span = name_v.span();
        let target = entry_named(base, &name, name_span, path)?;
        merge(target, o, path)?;
    }
    Ok(())
}

/// Merges `over`, a table of entries of keyed array `path` by name (what
/// a dotted key such as `tasks.worker.per_cpu = 2` reads as), into the
/// entries of `base` with those names.
fn merge_named<'a>(base: &mut DeArray<'a>, over: DeTable<'a>, path: &str) -> DResult<()> {
    for (name, fields) in over {
        let name_span = name.span();
        let full = format!("{path}.{}", name.get_ref());
        if is_unset(&fields) {
            // `tasks.worker = { unset = true }`: the entry goes.
            let before = base.len();
            let mut kept = DeArray::new();
            for item in base.iter().cloned() {
                let named = item.get_ref().as_table().and_then(item_name) == Some(name.get_ref());
                if !named {
                    kept.push(item);
                }
            }
            if kept.len() == before {
                return Err(nothing_to_unset(fields.span(), &full));
            }
            *base = kept;
            continue;
        }
        let fields_span = fields.span();
        let DeValue::Table(fields) = fields.into_inner() else {
            return Err(Diag::new(
                fields_span,
                format!("`{full}` is a whole entry; set one of its fields, e.g. `{full}.FIELD`"),
            ));
        };
        let target = entry_named(base, name.get_ref(), name_span, path)?;
        merge(target, fields, path)?;
    }
    Ok(())
}

/// Tables of variant `name` (its body, `over`) that differ from the
/// base's table at the same place only by leaving keys out: a merge keeps
/// those keys, which is rarely what leaving them out meant. Each warning
/// names the table, the keys kept and how to remove them.
pub(crate) fn keys_left_out(base: &DeTable<'_>, over: &DeTable<'_>, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    left_out_in(base, over, "", name, &mut out);
    out
}

fn left_out_in(
    base: &DeTable<'_>,
    over: &DeTable<'_>,
    path: &str,
    variant: &str,
    out: &mut Vec<String>,
) {
    for (k, v) in over.iter() {
        let full = join(path, k.get_ref());
        let Some(b) = base.get(k.get_ref().as_ref()) else {
            continue;
        };
        match (b.get_ref(), v.get_ref()) {
            (DeValue::Table(bt), DeValue::Table(ot)) if !is_unset(v) => {
                let same = !ot.is_empty()
                    && ot.iter().all(|(ok, ov)| {
                        bt.get(ok.get_ref().as_ref())
                            .is_some_and(|bv| same_value(bv, ov))
                    });
                let missing: Vec<&str> = bt
                    .keys()
                    .map(|k| k.get_ref().as_ref())
                    .filter(|k| !ot.contains_key(*k))
                    .collect();
                if same && !missing.is_empty() {
                    out.push(format!(
                        "variant `{variant}`: `{full}` is the base's but for {}, which a variant cannot leave out: the merge keeps {}; to remove a key, write it as `KEY = {{ unset = true }}`, e.g. `{full}.{} = {{ unset = true }}`",
                        list(&missing),
                        if missing.len() == 1 { "it" } else { "them" },
                        missing[0]
                    ));
                } else {
                    left_out_in(bt, ot, &full, variant, out);
                }
            }
            (DeValue::Array(ba), DeValue::Array(oa)) if KEYED_ARRAYS.contains(&full.as_str()) => {
                for o in oa.iter().filter_map(|o| o.get_ref().as_table()) {
                    let Some(n) = item_name(o) else { continue };
                    let entry = ba
                        .iter()
                        .filter_map(|b| b.get_ref().as_table())
                        .find(|b| item_name(b) == Some(n));
                    if let Some(b) = entry {
                        let mut b = b.clone();
                        let mut o = o.clone();
                        b.remove("name");
                        o.remove("name");
                        left_out_in(
                            &DeTable::from_iter([(
                                Spanned::new(0..0, Cow::Owned(n.to_string())),
                                Spanned::new(0..0, DeValue::Table(b)),
                            )]),
                            &DeTable::from_iter([(
                                Spanned::new(0..0, Cow::Owned(n.to_string())),
                                Spanned::new(0..0, DeValue::Table(o)),
                            )]),
                            &full,
                            variant,
                            out,
                        );
                    }
                }
            }
            _ => {}
        }
    }
}

/// Whether two values are written alike (spans aside).
fn same_value(a: &Value<'_>, b: &Value<'_>) -> bool {
    match (a.get_ref(), b.get_ref()) {
        (DeValue::Table(x), DeValue::Table(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.get(k.get_ref().as_ref())
                        .is_some_and(|w| same_value(v, w))
                })
        }
        (DeValue::Array(x), DeValue::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(v, w)| same_value(v, w))
        }
        (x, y) => format!("{x:?}") == format!("{y:?}"),
    }
}

/// A variant as declared: name, description, and where it is.
pub(crate) struct VariantDecl {
    pub name: String,
    pub description: String,
}

/// Reads the `[variant.*]` tables' names and descriptions.
pub(crate) fn variant_decls(variants: Option<&Value<'_>>) -> DResult<Vec<VariantDecl>> {
    let Some(v) = variants else {
        return Ok(Vec::new());
    };
    let Some(t) = v.get_ref().as_table() else {
        return Err(Diag::new(
            v.span(),
            "`variant` must be a table of variants: `[variant.NAME]`",
        ));
    };
    let mut out = Vec::new();
    for (k, body) in t.iter() {
        let Some(bt) = body.get_ref().as_table() else {
            return Err(Diag::new(
                body.span(),
                format!("variant `{}` must be a table", k.get_ref()),
            ));
        };
        let description = match bt.get("description") {
            None => String::new(),
            Some(d) => d
                .get_ref()
                .as_str()
                .ok_or_else(|| Diag::new(d.span(), "expected a string"))?
                .to_string(),
        };
        if let Some(bad) = bt.get("variant") {
            return Err(Diag::new(bad.span(), "variants cannot be nested"));
        }
        out.push(VariantDecl {
            name: k.get_ref().to_string(),
            description,
        });
    }
    Ok(out)
}

/// Merges variant `name` over `root`.
pub(crate) fn apply_variant<'a>(
    root: &mut DeTable<'a>,
    variants: Option<Value<'a>>,
    name: &str,
    doc_span: Range<usize>,
) -> DResult<()> {
    let decls = variant_decls(variants.as_ref())?;
    let known: Vec<&str> = decls.iter().map(|d| d.name.as_str()).collect();
    let unknown = || {
        Diag::new(
            doc_span.start..doc_span.start,
            format!("unknown variant `{name}`"),
        )
        .help(format!("available variants: {}", list(&known)))
    };
    let Some(DeValue::Table(mut all)) = variants.map(Spanned::into_inner) else {
        return Err(unknown());
    };
    let Some(v) = all.remove(name) else {
        return Err(unknown());
    };
    let DeValue::Table(mut body) = v.into_inner() else {
        return Err(unknown());
    };
    body.remove("description");
    merge(root, body, "")
}

/// Applies `--set key=value`; `span` is the value's region.
pub(crate) fn apply_set<'a>(
    root: &mut DeTable<'a>,
    key: &str,
    value: Value<'a>,
    span: Range<usize>,
) -> DResult<()> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.trim().is_empty()) {
        return Err(Diag::new(span, format!("`{key}` is not a valid key path"))
            .help("write a dotted path such as `scenario.duration` or `tasks.NAME.per_cpu`"));
    }
    set_in(root, &parts, "", value, &span)
}

fn set_in<'a>(
    t: &mut DeTable<'a>,
    parts: &[&str],
    path: &str,
    value: Value<'a>,
    span: &Range<usize>,
) -> DResult<()> {
    let (head, rest) = parts.split_first().expect("non-empty key path");
    let full = join(path, head);
    if rest.is_empty() {
        if is_unset(&value) {
            return match t.remove(*head) {
                Some(_) => Ok(()),
                None => Err(nothing_to_unset(span.clone(), &full)),
            };
        }
        match t.get_mut(*head) {
            Some(v) => *v = value,
            None => {
                t.insert(
                    Spanned::new(span.clone(), Cow::Owned(head.to_string())),
                    value,
                );
            }
        }
        return Ok(());
    }
    if t.get(*head).is_none() {
        t.insert(
            Spanned::new(span.clone(), Cow::Owned(head.to_string())),
            Spanned::new(span.clone(), DeValue::Table(DeTable::new())),
        );
    }
    let entry = t.get_mut(*head).expect("just inserted");
    match entry.get_mut() {
        DeValue::Table(sub) => set_in(sub, rest, &full, value, span),
        DeValue::Array(items) if KEYED_ARRAYS.contains(&full.as_str()) => {
            let name = rest[0];
            let known: Vec<String> = items
                .iter()
                .filter_map(|v| {
                    v.get_ref()
                        .as_table()
                        .and_then(item_name)
                        .map(str::to_string)
                })
                .collect();
            let item = items.iter_mut().find_map(|v| match v.get_mut() {
                DeValue::Table(t) if item_name(t) == Some(name) => Some(t),
                _ => None,
            });
            let Some(item) = item else {
                return Err(Diag::new(
                    span.clone(),
                    format!("there is no `{full}` entry named `{name}`"),
                )
                .help(format!("known: {}", list(&known))));
            };
            if rest.len() == 1 {
                return Err(Diag::new(span.clone(), format!("`{full}.{name}` is a whole entry; set one of its fields, e.g. `{full}.{name}.FIELD`")));
            }
            set_in(item, &rest[1..], &format!("{full}.{name}"), value, span)
        }
        _ => Err(Diag::new(
            span.clone(),
            format!(
                "`{full}` is not a table, so `{}` cannot be set inside it",
                parts.join(".")
            ),
        )),
    }
}

/// Parses a `--set` value: TOML if it is a TOML value, else a string.
pub(crate) fn parse_set_value(value: &str, base: usize) -> Value<'_> {
    match DeValue::parse(value) {
        Ok(v) => shift_value(v, base),
        Err(_) => Spanned::new(
            base..base + value.len(),
            DeValue::String(Cow::Borrowed(value)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> DeTable<'_> {
        DeTable::parse(s).unwrap().into_inner()
    }

    #[test]
    fn merges_tables_and_keyed_arrays() {
        let mut base = parse(
            "[a]\nx = 1\ny = [1, 2]\n[[tasks]]\nname = \"t\"\nn = 1\n[[tasks]]\nname = \"u\"\nn = 2\n",
        );
        let over = parse("[a]\ny = [3]\nz = 4\n[[tasks]]\nname = \"u\"\nn = 5\n");
        merge(&mut base, over, "").unwrap();
        let a = base["a"].get_ref().as_table().unwrap();
        assert_eq!(a["x"].get_ref().as_integer().unwrap().as_str(), "1");
        assert_eq!(a["y"].get_ref().as_array().unwrap().len(), 1);
        assert!(a.contains_key("z"));
        let tasks = base["tasks"].get_ref().as_array().unwrap();
        let u = tasks[1].get_ref().as_table().unwrap();
        assert_eq!(u["n"].get_ref().as_integer().unwrap().as_str(), "5");
        let t = tasks[0].get_ref().as_table().unwrap();
        assert_eq!(t["n"].get_ref().as_integer().unwrap().as_str(), "1");
    }

    #[test]
    fn unknown_keyed_item_is_an_error() {
        let mut base = parse("[[tasks]]\nname = \"t\"\n");
        let over = parse("[[tasks]]\nname = \"nope\"\n");
        let e = merge(&mut base, over, "").unwrap_err();
        assert!(e.message.contains("no `tasks` entry named `nope`"));
    }

    #[test]
    fn a_dotted_key_names_a_keyed_entry_as_set_does() {
        // `[variant.x]` with `tasks.worker.vars.every = 4`: TOML reads the
        // dotted key as tables, not as the `tasks` array.
        let mut base = parse(
            "[[tasks]]\nname = \"idle\"\n[[tasks]]\nname = \"worker\"\nvars = { every = 1, n = 2 }\n",
        );
        let over = parse("tasks.worker.vars.every = 4\n");
        merge(&mut base, over, "").unwrap();
        let tasks = base["tasks"].get_ref().as_array().unwrap();
        assert_eq!(tasks.len(), 2);
        let w = tasks[1].get_ref().as_table().unwrap();
        let vars = w["vars"].get_ref().as_table().unwrap();
        assert_eq!(vars["every"].get_ref().as_integer().unwrap().as_str(), "4");
        assert_eq!(vars["n"].get_ref().as_integer().unwrap().as_str(), "2");
        let e = merge(&mut base, parse("tasks.nope.n = 1\n"), "").unwrap_err();
        assert!(
            e.message.contains("no `tasks` entry named `nope`"),
            "{}",
            e.message
        );
        let e = merge(&mut base, parse("tasks.worker = 1\n"), "").unwrap_err();
        assert!(e.message.contains("is a whole entry"), "{}", e.message);
    }

    #[test]
    fn unset_removes_a_key_an_entry_or_refuses_a_missing_one() {
        let mut base = parse(
            "[objects]\nm = { type = \"mutex\", line = \"l\" }\n[[tasks]]\nname = \"t\"\n[[tasks]]\nname = \"u\"\n",
        );
        merge(&mut base, parse("objects.m.line = { unset = true }\n"), "").unwrap();
        let m = base["objects"].get_ref().as_table().unwrap()["m"].get_ref();
        assert!(!m.as_table().unwrap().contains_key("line"));
        merge(&mut base, parse("tasks.u = { unset = true }\n"), "").unwrap();
        assert_eq!(base["tasks"].get_ref().as_array().unwrap().len(), 1);
        let e = merge(&mut base, parse("objects.m.nope = { unset = true }\n"), "").unwrap_err();
        assert!(
            e.message.contains("no `objects.m.nope` to remove"),
            "{}",
            e.message
        );
        apply_set(
            &mut base,
            "objects.m.type",
            parse_set_value("{ unset = true }", 0),
            0..16,
        )
        .unwrap();
        let m = base["objects"].get_ref().as_table().unwrap()["m"].get_ref();
        assert!(m.as_table().unwrap().is_empty());
    }

    #[test]
    fn sets_create_and_replace() {
        let mut base = parse("[[tasks]]\nname = \"t\"\nn = 1\n");
        apply_set(
            &mut base,
            "kernel.hz",
            parse_set_value("250", 100),
            100..103,
        )
        .unwrap();
        apply_set(&mut base, "tasks.t.n", parse_set_value("7", 200), 200..201).unwrap();
        let k = base["kernel"].get_ref().as_table().unwrap();
        assert_eq!(k["hz"].span(), 100..103);
        let t = base["tasks"].get_ref().as_array().unwrap()[0]
            .get_ref()
            .as_table()
            .unwrap();
        assert_eq!(t["n"].get_ref().as_integer().unwrap().as_str(), "7");
        assert!(apply_set(&mut base, "tasks.x.n", parse_set_value("1", 300), 300..301).is_err());
        assert!(apply_set(&mut base, "a..b", parse_set_value("1", 300), 300..301).is_err());
        assert_eq!(
            parse_set_value("hello world", 5).get_ref().as_str(),
            Some("hello world")
        );
    }
}
