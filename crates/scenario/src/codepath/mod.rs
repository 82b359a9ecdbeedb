//! Code paths written like kernel code: a C-like text form of a task's
//! `code` and of a `[functions]` entry, given as a TOML string.
//!
//! ```toml
//! [functions]
//! membarrier_targeted = '''
//!     work(60ns);
//!     mutex_guard(serialize_targeted) {
//!         if (cpu_online(target))
//!             smp_call_function_single(target, func = 50ns);
//!     }
//! '''
//! ```
//!
//! There is one IR and one compiler. The text is parsed (`parser.rs`) into
//! the tree a TOML array of inline tables is ([`Node`]: an op's name and
//! its fields) and put back into the document as that array, with every
//! value spanning the text it was written as, before the document is
//! deserialized. From there on nothing tells the two forms apart: the
//! field checks, the lowering and the error messages are the op
//! registry's, and an op added to the registry is written in the text form
//! with no change here. Arguments map onto fields through the registry
//! too: positional ones fill the op's fields in registry order, named ones
//! (`name = value`) say which. Values stay source text (durations,
//! expressions), so their grammars are not duplicated either.
//!
//! `print.rs` goes the other way, tree to text; `convert.rs` rewrites
//! whole scenario files from one form to the other, keeping the comments
//! that annotate the ops.

use std::borrow::Cow;
use std::ops::Range;

use toml::de::{DeArray, DeTable, DeValue};
use toml::Spanned;

use crate::error::{DResult, Diag, Sources};

mod convert;
#[cfg(test)]
mod doc;
#[cfg(test)]
mod fuzz;
mod lexer;
mod parser;
mod print;
mod spans;

pub use convert::{code_form, toml_form};
pub(crate) use spans::SpanMap;

/// The fields that hold code rather than a value: blocks of ops
/// (`body`, `then`, `else`) and `choose`'s weighted blocks (`options`).
/// They are written as blocks, never as positional arguments.
pub(crate) const STRUCTURAL: &[&str] = &["body", "then", "else", "options"];

/// One op as a TOML inline table holds it: `op = NAME` and its fields.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub span: Range<usize>,
    pub name: String,
    pub name_span: Range<usize>,
    pub fields: Vec<Field>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Field {
    pub key: String,
    pub key_span: Range<usize>,
    pub val: Val,
    pub span: Range<usize>,
}

impl Field {
    fn new(key: &str, key_span: Range<usize>, val: Val, span: Range<usize>) -> Self {
        Field {
            key: key.to_string(),
            key_span,
            val,
            span,
        }
    }
}

/// A field's value, typed as TOML would type it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    Str(String),
    /// An integer, in decimal.
    Int(String),
    Bool(bool),
    Ops(Block),
    Choices(Vec<Choice>),
}

/// A list of ops; `span` covers its brackets or braces.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Block {
    pub span: Range<usize>,
    pub items: Vec<Node>,
}

/// One option of a `choose`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Choice {
    pub span: Range<usize>,
    pub weight: String,
    pub weight_span: Range<usize>,
    pub body: Block,
}

/// A syntax error, at a byte range of the code text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CodeErr {
    pub range: Range<usize>,
    pub message: String,
    pub help: Option<String>,
}

impl CodeErr {
    fn new(range: Range<usize>, message: impl Into<String>) -> Self {
        CodeErr {
            range,
            message: message.into(),
            help: None,
        }
    }

    fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    fn at(self, map: &SpanMap) -> Diag {
        let d = Diag::new(map.range(&self.range), self.message);
        match self.help {
            Some(h) => d.help(h),
            None => d,
        }
    }
}

/// Parses code text with spans in the text's own offsets; `functions`
/// are the names a bare `NAME();` may call. For tests and tools.
pub(crate) fn parse_text(src: &str, functions: &[String]) -> Result<Block, CodeErr> {
    parser::parse(src, functions)
}

impl Block {
    fn map_spans(&mut self, m: &SpanMap) {
        self.span = m.range(&self.span);
        for n in &mut self.items {
            n.span = m.range(&n.span);
            n.name_span = m.range(&n.name_span);
            for f in &mut n.fields {
                f.key_span = m.range(&f.key_span);
                f.span = m.range(&f.span);
                match &mut f.val {
                    Val::Ops(b) => b.map_spans(m),
                    Val::Choices(cs) => {
                        for c in cs {
                            c.span = m.range(&c.span);
                            c.weight_span = m.range(&c.weight_span);
                            c.body.map_spans(m);
                        }
                    }
                    Val::Str(_) | Val::Int(_) | Val::Bool(_) => {}
                }
            }
        }
    }

    /// The block as the TOML array of inline tables it stands for,
    /// borrowing its strings (which is why the parsed code must outlive
    /// the document it is put into).
    fn to_value(&self) -> Spanned<DeValue<'_>> {
        let mut arr = DeArray::new();
        for n in &self.items {
            arr.push(n.to_value());
        }
        Spanned::new(self.span.clone(), DeValue::Array(arr))
    }
}

fn key<'a>(k: &'a str, span: &Range<usize>) -> Spanned<Cow<'a, str>> {
    Spanned::new(span.clone(), Cow::Borrowed(k))
}

fn string<'a>(s: &'a str, span: &Range<usize>) -> Spanned<DeValue<'a>> {
    Spanned::new(span.clone(), DeValue::String(Cow::Borrowed(s)))
}

impl Node {
    fn to_value(&self) -> Spanned<DeValue<'_>> {
        let mut t = DeTable::new();
        t.insert(
            key("op", &self.name_span),
            string(&self.name, &self.name_span),
        );
        for f in &self.fields {
            let v = match &f.val {
                Val::Str(s) => string(s, &f.span),
                // `DeValue` integers can only be made by parsing; the text
                // is a canonical decimal, so this succeeds.
                Val::Int(i) => match DeValue::parse(i) {
                    Ok(v) => Spanned::new(f.span.clone(), v.into_inner()),
                    Err(_) => string(i, &f.span),
                },
                Val::Bool(b) => Spanned::new(f.span.clone(), DeValue::Boolean(*b)),
                Val::Ops(b) => b.to_value(),
                Val::Choices(cs) => {
                    let mut arr = DeArray::new();
                    for c in cs {
                        let mut ct = DeTable::new();
                        let w = match DeValue::parse(&c.weight) {
                            Ok(v) => Spanned::new(c.weight_span.clone(), v.into_inner()),
                            Err(_) => string(&c.weight, &c.weight_span),
                        };
                        ct.insert(key("weight", &c.weight_span), w);
                        ct.insert(key("body", &c.body.span), c.body.to_value());
                        arr.push(Spanned::new(c.span.clone(), DeValue::Table(ct)));
                    }
                    Spanned::new(f.span.clone(), DeValue::Array(arr))
                }
            };
            t.insert(key(&f.key, &f.key_span), v);
        }
        Spanned::new(self.span.clone(), DeValue::Table(t))
    }
}

/// Where a code path is in the document.
#[derive(Clone, Debug, PartialEq)]
enum Place {
    Function(String),
    Hook(String),
    Task(usize),
}

/// The code paths of a document that are written as text, parsed.
pub(crate) struct Parsed {
    items: Vec<(Place, Block)>,
}

/// The names of `[functions]`, which `NAME();` calls.
fn function_names(root: &DeTable<'_>) -> Vec<String> {
    root.get("functions")
        .and_then(|f| f.get_ref().as_table())
        .map(|t| t.keys().map(|k| k.get_ref().to_string()).collect())
        .unwrap_or_default()
}

/// The string values where code may be: each `[functions]` entry and each
/// task group's `code`.
fn code_strings<'r>(root: &'r DeTable<'_>) -> Vec<(Place, &'r Spanned<DeValue<'r>>)> {
    let mut out = Vec::new();
    if let Some(f) = root.get("functions").and_then(|f| f.get_ref().as_table()) {
        for (k, v) in f.iter() {
            if v.get_ref().is_str() {
                out.push((Place::Function(k.get_ref().to_string()), v));
            }
        }
    }
    if let Some(f) = root.get("hooks").and_then(|f| f.get_ref().as_table()) {
        for (k, v) in f.iter() {
            if v.get_ref().is_str() {
                out.push((Place::Hook(k.get_ref().to_string()), v));
            }
        }
    }
    if let Some(tasks) = root.get("tasks").and_then(|t| t.get_ref().as_array()) {
        for (i, t) in tasks.iter().enumerate() {
            if let Some(code) = t.get_ref().as_table().and_then(|t| t.get("code")) {
                if code.get_ref().is_str() {
                    out.push((Place::Task(i), code));
                }
            }
        }
    }
    out
}

/// Parses every code path of the merged document `root` that is written
/// as text. Spans are the virtual text's of `srcs` (so errors point into
/// the string as it is written in the file).
pub(crate) fn parse_document(root: &DeTable<'_>, srcs: &Sources) -> DResult<Parsed> {
    use crate::limits::{CODE_BYTES, FUNCTIONS};
    let functions = function_names(root);
    let max_functions = FUNCTIONS.get().map_err(|e| Diag::new(0..0, e))?;
    if functions.len() as u64 > max_functions {
        let at = root
            .get("functions")
            .and_then(|f| f.get_ref().as_table())
            .and_then(|t| t.keys().nth(max_functions as usize))
            .map_or(0..0, |k| k.span());
        return Err(Diag::new(
            at,
            format!(
                "too many functions: {} ({})",
                functions.len(),
                FUNCTIONS.explain(max_functions)
            ),
        ));
    }
    let max_code = CODE_BYTES.get().map_err(|e| Diag::new(0..0, e))?;
    let mut items = Vec::new();
    for (place, v) in code_strings(root) {
        let text = v.get_ref().as_str().unwrap_or_default();
        // Checked before parsing: a huge string costs far more parsed.
        if text.len() as u64 > max_code {
            let start = v.span().start;
            return Err(Diag::new(
                start..start + 1,
                format!(
                    "this code string is {} bytes ({})",
                    text.len(),
                    CODE_BYTES.explain(max_code)
                ),
            )
            .help("move repeated code into `[functions]` and `call` it"));
        }
        let map = SpanMap::new(srcs.slice(&v.span()), text, v.span());
        let mut block = parser::parse(text, &functions).map_err(|e| e.at(&map))?;
        block.map_spans(&map);
        block.span = v.span();
        items.push((place, block));
    }
    Ok(Parsed { items })
}

impl Parsed {
    /// Replaces each parsed code string of `root` by its op array.
    pub(crate) fn expand<'a>(&'a self, root: &mut DeTable<'a>) {
        for (place, block) in &self.items {
            let slot = match place {
                Place::Function(name) => {
                    root.get_mut("functions").and_then(|f| match f.get_mut() {
                        DeValue::Table(t) => t.get_mut(name.as_str()),
                        _ => None,
                    })
                }
                Place::Hook(name) => root.get_mut("hooks").and_then(|f| match f.get_mut() {
                    DeValue::Table(t) => t.get_mut(name.as_str()),
                    _ => None,
                }),
                Place::Task(i) => root.get_mut("tasks").and_then(|t| match t.get_mut() {
                    DeValue::Array(a) => a.get_mut(*i).and_then(|t| match t.get_mut() {
                        DeValue::Table(t) => t.get_mut("code"),
                        _ => None,
                    }),
                    _ => None,
                }),
            };
            if let Some(slot) = slot {
                *slot = block.to_value();
            }
        }
    }
}
