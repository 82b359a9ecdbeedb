//! Whole scenario files from one form of code path to the other, by
//! replacing only the code values' text: everything else (comments,
//! layout, other tables) stays byte for byte.

use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::print;
use super::{function_names, Block, Choice, Field, Node, Val};
use crate::error::{Diag, Sources};
use crate::ScenarioError;

type Value<'a> = Spanned<DeValue<'a>>;

/// Where code may be in a table laid out as the document root is (the
/// root itself, or a `[variant.NAME]`): `[functions]` and `[hooks]`
/// entries and the `code` of each `[[tasks]]`.
fn code_values<'r>(t: &'r DeTable<'_>, out: &mut Vec<&'r Value<'r>>) {
    if let Some(f) = t.get("functions").and_then(|f| f.get_ref().as_table()) {
        out.extend(f.values());
    }
    if let Some(f) = t.get("hooks").and_then(|f| f.get_ref().as_table()) {
        out.extend(f.values());
    }
    // `[[tasks]]` in the document; `tasks.NAME.code = ...` in a variant,
    // which replaces one task group's code by name.
    let tasks = t.get("tasks").map(|t| t.get_ref());
    let tasks: Vec<&'r Value<'r>> = match (
        tasks.and_then(|v| v.as_array()),
        tasks.and_then(|v| v.as_table()),
    ) {
        (Some(array), _) => array.iter().collect(),
        (_, Some(by_name)) => by_name.values().collect(),
        _ => Vec::new(),
    };
    for task in tasks {
        if let Some(code) = task.get_ref().as_table().and_then(|t| t.get("code")) {
            out.push(code);
        }
    }
}

/// Every value in the document that is code, variants' included, in
/// file order.
fn all_code_values<'r>(root: &'r DeTable<'_>) -> Vec<&'r Value<'r>> {
    let mut out = Vec::new();
    code_values(root, &mut out);
    if let Some(vs) = root.get("variant").and_then(|v| v.get_ref().as_table()) {
        for v in vs.values() {
            if let Some(t) = v.get_ref().as_table() {
                code_values(t, &mut out);
            }
        }
    }
    out.sort_by_key(|v| v.span().start);
    out
}

/// The names of `[functions]`, variants' included.
/// The functions code may call: the document's, its variants', and
/// those of the files it includes (`helper();` where a library defines
/// `helper`), which the scenario as loaded has read.
fn all_function_names(
    path: &Path,
    text: &str,
    root: &DeTable<'_>,
) -> Result<Vec<String>, ScenarioError> {
    let mut functions = function_names(root);
    if let Some(vs) = root.get("variant").and_then(|v| v.get_ref().as_table()) {
        for v in vs.values().filter_map(|v| v.get_ref().as_table()) {
            functions.extend(function_names(v));
        }
    }
    if root.contains_key("include") {
        for inc in crate::parse(path, text.to_string())?.includes {
            if let Ok(lib) = DeTable::parse(&inc.text) {
                functions.extend(function_names(lib.get_ref()));
            }
        }
    }
    Ok(functions)
}

fn error(path: &Path, text: &str, span: Range<usize>, msg: String) -> ScenarioError {
    Sources::new(path, text).render(Diag::new(span, msg))
}

/// Reads a TOML op array (as the document has it) into a [`Block`].
pub(super) fn block_of(v: &Value<'_>) -> Result<Block, (Range<usize>, String)> {
    let Some(arr) = v.get_ref().as_array() else {
        return Err((v.span(), "expected an array of ops".into()));
    };
    let items = arr.iter().map(node_of).collect::<Result<_, _>>()?;
    Ok(Block {
        span: v.span(),
        items,
    })
}

fn node_of(v: &Value<'_>) -> Result<Node, (Range<usize>, String)> {
    let Some(t) = v.get_ref().as_table() else {
        return Err((v.span(), "expected an op: `{ op = \"...\", ... }`".into()));
    };
    let Some(op) = t.get("op") else {
        return Err((v.span(), "an op needs `op = \"NAME\"`".into()));
    };
    let Some(name) = op.get_ref().as_str() else {
        return Err((op.span(), "expected the op's name".into()));
    };
    let mut fields = Vec::new();
    for (k, fv) in t.iter() {
        if k.get_ref() == "op" {
            continue;
        }
        let val = if k.get_ref() == "options" {
            Val::Choices(choices(fv)?)
        } else {
            val_of(fv)?
        };
        fields.push(Field::new(k.get_ref(), k.span(), val, fv.span()));
    }
    Ok(Node {
        span: v.span(),
        name: name.to_string(),
        name_span: op.span(),
        fields,
    })
}

fn val_of(v: &Value<'_>) -> Result<Val, (Range<usize>, String)> {
    Ok(match v.get_ref() {
        DeValue::String(s) => Val::Str(s.to_string()),
        DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
            Ok(n) => Val::Int(n.to_string()),
            Err(_) => return Err((v.span(), "integer out of range".into())),
        },
        DeValue::Boolean(b) => Val::Bool(*b),
        DeValue::Array(_) => Val::Ops(block_of(v)?),
        other => {
            return Err((
                v.span(),
                format!("a {} cannot be written as code", other.type_str()),
            ))
        }
    })
}

fn choices(v: &Value<'_>) -> Result<Vec<Choice>, (Range<usize>, String)> {
    let Some(arr) = v.get_ref().as_array() else {
        return Err((v.span(), "expected an array of options".into()));
    };
    let mut out = Vec::new();
    for c in arr.iter() {
        let t = c.get_ref().as_table();
        let (Some(w), Some(b)) = (
            t.and_then(|t| t.get("weight")),
            t.and_then(|t| t.get("body")),
        ) else {
            return Err((c.span(), "expected `{ weight = N, body = [...] }`".into()));
        };
        if t.is_some_and(|t| t.len() != 2) {
            return Err((c.span(), "an option has only `weight` and `body`".into()));
        }
        let Val::Int(weight) = val_of(w)? else {
            return Err((w.span(), "a weight is an integer".into()));
        };
        out.push(Choice {
            span: c.span(),
            weight,
            weight_span: w.span(),
            body: block_of(b)?,
        });
    }
    Ok(out)
}

/// The comments (`# ...`) in TOML text, skipping strings.
fn toml_comments(text: &str) -> usize {
    let b = text.as_bytes();
    let (mut i, mut n) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'#' => {
                n += 1;
                i = text[i..].find('\n').map_or(b.len(), |k| i + k);
            }
            q @ (b'"' | b'\'') => {
                let delim = if text[i..].starts_with(if q == b'"' { "\"\"\"" } else { "'''" }) {
                    3
                } else {
                    1
                };
                let close = &text[i..i + delim];
                i += delim;
                while i < b.len() && !text[i..].starts_with(close) {
                    i += if q == b'"' && b[i] == b'\\' { 2 } else { 1 };
                }
                i += delim;
            }
            _ => i += 1,
        }
    }
    n
}

/// `code` as a TOML multi-line string: literal if it can be.
fn toml_string(code: &str) -> String {
    let literal_ok = !code.contains("'''")
        && !code
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t');
    if literal_ok {
        return format!("'''\n{code}'''");
    }
    format!("\"\"\"\n{}\"\"\"", toml_escaped(code, true))
}

/// `s` escaped for a TOML basic string; a `multiline` one keeps its
/// newlines and tabs as they are.
fn toml_escaped(s: &str, multiline: bool) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\t' if multiline => out.push(c),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Rewrites every code path written as a TOML array of ops into the
/// C-like text form, keeping the comments between the ops (as `//`
/// comments). Values already in the text form are left alone.
pub fn code_form(path: &Path, text: &str) -> Result<String, ScenarioError> {
    let srcs = Sources::new(path, text);
    let doc = DeTable::parse(text).map_err(|e| srcs.render(Diag::from_toml(&e, 0, 0..0)))?;
    let root = doc.get_ref();
    let functions = all_function_names(path, text, root)?;
    let mut out = String::new();
    let mut at = 0;
    for v in all_code_values(root) {
        if !v.get_ref().is_array() {
            continue;
        }
        let span = v.span();
        let block = block_of(v).map_err(|(s, m)| error(path, text, s, m))?;
        if block.items.is_empty() && toml_comments(&text[span.clone()]) == 0 {
            // `[]` says "no ops" as well as an empty string would.
            continue;
        }
        let printed = print::code(&block, Some(text), &functions, 4)
            .map_err(|m| error(path, text, span.clone(), m))?;
        let had = toml_comments(&text[span.clone()]);
        if printed.comments != had {
            return Err(error(
                path,
                text,
                span,
                format!(
                    "this code has {had} comments, of which {} would be kept; move the others between its ops",
                    printed.comments
                ),
            ));
        }
        out.push_str(&text[at..span.start]);
        out.push_str(&toml_string(&printed.text));
        at = span.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// The comments (`//` and `/* */`) in `range` of code text `src`,
/// skipping strings: each with whether it is on the range's first line
/// (the line an op or a block's `{` ends on).
fn code_comments(src: &str, range: Range<usize>) -> Vec<(bool, String)> {
    let text = &src[range];
    let b = text.as_bytes();
    let (mut i, mut line, mut out) = (0, 0, Vec::new());
    while i < b.len() {
        if text[i..].starts_with("//") {
            let end = text[i..].find('\n').map_or(b.len(), |k| i + k);
            out.push((line == 0, text[i + 2..end].trim().to_string()));
            i = end;
        } else if text[i..].starts_with("/*") {
            let end = text[i..].find("*/").map_or(b.len(), |k| i + k);
            let words: Vec<&str> = text[i + 2..end].split_whitespace().collect();
            out.push((line == 0, words.join(" ")));
            line += text[i..end].matches('\n').count();
            i = (end + 2).min(b.len());
        } else {
            match b[i] {
                b'\n' => line += 1,
                b'"' => {
                    i += 1;
                    while i < b.len() && b[i] != b'"' {
                        i += if b[i] == b'\\' { 2 } else { 1 };
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// Prints code text as TOML arrays, carrying its comments over as `#`
/// comments where they were: after an op (or an opening bracket) on its
/// line, or on lines of their own before the next op.
struct TomlPrinter<'s> {
    /// The code text the blocks' spans point into.
    src: &'s str,
    out: String,
    /// How many comments were carried over.
    comments: usize,
}

impl TomlPrinter<'_> {
    /// The comments of a gap on its first line, after what was printed.
    fn trailing(&mut self, gap: &[(bool, String)]) {
        for (_, c) in gap.iter().filter(|c| c.0) {
            self.out.push_str("  # ");
            self.out.push_str(c);
            self.comments += 1;
        }
    }

    /// The comments of a gap on lines of their own.
    fn own_lines(&mut self, gap: &[(bool, String)], indent: usize) {
        for (_, c) in gap.iter().filter(|c| !c.0) {
            self.out.push_str(&" ".repeat(indent));
            self.out.push_str("# ");
            self.out.push_str(c);
            self.out.push('\n');
            self.comments += 1;
        }
    }

    /// `b` as a TOML array of inline tables, one op a line, indented as
    /// the shipped scenarios are.
    fn array(&mut self, b: &Block, indent: usize) {
        let mut edges = vec![b.span.start];
        for n in &b.items {
            edges.push(n.span.start);
            edges.push(n.span.end);
        }
        edges.push(b.span.end);
        let gaps: Vec<Vec<(bool, String)>> = edges
            .chunks(2)
            .map(|e| code_comments(self.src, e[0]..e[1].max(e[0])))
            .collect();
        if b.items.is_empty() && gaps[0].is_empty() {
            self.out.push_str("[]");
            return;
        }
        self.out.push('[');
        self.trailing(&gaps[0]);
        self.out.push('\n');
        for (i, n) in b.items.iter().enumerate() {
            self.own_lines(&gaps[i], indent + 2);
            self.out.push_str(&" ".repeat(indent + 2));
            self.op(n, indent);
            self.out.push(',');
            self.trailing(&gaps[i + 1]);
            self.out.push('\n');
        }
        self.own_lines(&gaps[b.items.len()], indent + 2);
        self.out.push_str(&" ".repeat(indent));
        self.out.push(']');
    }

    /// A `choose`'s options; the comments between them (after an
    /// option's last op) stay beside the option, as `code_form` reads them.
    fn choices(&mut self, n: &Node, cs: &[Choice], indent: usize) {
        let mut edges = vec![n.span.start];
        for c in cs {
            edges.push(c.span.start);
            edges.push(c.span.end);
        }
        edges.push(n.span.end);
        let gaps: Vec<Vec<(bool, String)>> = edges
            .chunks(2)
            .map(|e| code_comments(self.src, e[0]..e[1].max(e[0])))
            .collect();
        self.out.push('[');
        self.trailing(&gaps[0]);
        self.out.push('\n');
        for (i, c) in cs.iter().enumerate() {
            self.own_lines(&gaps[i], indent + 4);
            self.out.push_str(&" ".repeat(indent + 4));
            self.out
                .push_str(&format!("{{ weight = {}, body = ", c.weight));
            self.array(&c.body, indent + 4);
            self.out.push_str(" },");
            self.trailing(&gaps[i + 1]);
            self.out.push('\n');
        }
        self.own_lines(&gaps[cs.len()], indent + 4);
        self.out.push_str(&" ".repeat(indent + 2));
        self.out.push(']');
    }

    fn op(&mut self, n: &Node, indent: usize) {
        self.out.push_str("{ op = ");
        self.out.push_str(&toml_str(&n.name));
        for f in &n.fields {
            self.out.push_str(", ");
            self.out.push_str(&toml_key(&f.key));
            self.out.push_str(" = ");
            match &f.val {
                Val::Str(s) => self.out.push_str(&toml_str(s)),
                Val::Int(i) => self.out.push_str(i),
                Val::Bool(v) => self.out.push_str(&v.to_string()),
                Val::Ops(b) => self.array(b, indent + 2),
                Val::Choices(cs) => self.choices(n, cs, indent),
            }
        }
        self.out.push_str(" }");
    }
}

fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        toml_str(k)
    }
}

fn toml_str(s: &str) -> String {
    format!("\"{}\"", toml_escaped(s, false))
}

/// Rewrites every code path written in the text form into a TOML array
/// of ops, keeping the comments between the ops (as `#` comments, which
/// [`code_form`] turns back into `//` ones); a comment anywhere else (inside
/// an op's arguments) is an error, not dropped.
pub fn toml_form(path: &Path, text: &str) -> Result<String, ScenarioError> {
    let srcs = Sources::new(path, text);
    let doc = DeTable::parse(text).map_err(|e| srcs.render(Diag::from_toml(&e, 0, 0..0)))?;
    let root = doc.get_ref();
    let functions = all_function_names(path, text, root)?;
    let mut out = String::new();
    let mut at = 0;
    for v in all_code_values(root) {
        let Some(code) = v.get_ref().as_str() else {
            continue;
        };
        let span = v.span();
        let map = super::SpanMap::new(srcs.slice(&span), code, span.clone());
        let block = super::parse_text(code, &functions).map_err(|e| srcs.render(e.at(&map)))?;
        let mut p = TomlPrinter {
            src: code,
            out: String::new(),
            comments: 0,
        };
        p.array(&block, 0);
        let had = code_comments(code, 0..code.len()).len();
        if p.comments != had {
            return Err(error(
                path,
                text,
                span,
                format!(
                    "this code has {had} comments, of which {} would be kept; move the others between its ops",
                    p.comments
                ),
            ));
        }
        out.push_str(&text[at..span.start]);
        out.push_str(&p.out);
        at = span.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}
