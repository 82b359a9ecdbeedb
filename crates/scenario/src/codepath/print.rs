//! Op trees ([`Node`]) to code-path text, the inverse of `parser.rs`:
//! reading the text back gives the same tree. Given the TOML text the tree
//! was read from, the comments between its ops come along as `//`
//! comments.

use super::parser::{read_value, KEYWORDS};
use super::{Block, Choice, Node, Val, STRUCTURAL};
use crate::expr::is_identifier;
use crate::ops::signatures;
use crate::raw::RawOp;

/// How far a block is indented inside its opener.
const INDENT: usize = 4;
/// The column comments after a statement start at, where it fits.
const COMMENT_COLUMN: usize = 40;

/// Prints `block`'s ops, each line indented by `indent` spaces. `src` is
/// the TOML text the tree's spans point into, for its comments;
/// `functions` are the functions a `call` may be written as `NAME();` of.
pub(super) fn code(
    block: &Block,
    src: Option<&str>,
    functions: &[String],
    indent: usize,
) -> Result<Printed, String> {
    let mut p = Printer {
        src,
        functions,
        lines: Vec::new(),
        comments: 0,
    };
    if let Some(c) = p.block(block, indent)? {
        p.lines.insert(0, format!("{}// {c}", " ".repeat(indent)));
        p.comments += 1;
    }
    let mut text = p.lines.join("\n");
    text.push('\n');
    Ok(Printed {
        text,
        comments: p.comments,
    })
}

pub(super) struct Printed {
    pub text: String,
    /// How many comments of `src` were carried over.
    pub comments: usize,
}

struct Printer<'s> {
    src: Option<&'s str>,
    functions: &'s [String],
    lines: Vec<String>,
    comments: usize,
}

/// The trivia between two items of a TOML array.
#[derive(Default)]
struct Gap {
    /// A comment on the line the gap starts on.
    same_line: Option<String>,
    /// The lines after: comments, and `None` for blank lines.
    lines: Vec<Option<String>>,
}

impl Gap {
    fn is_empty(&self) -> bool {
        self.same_line.is_none() && self.lines.iter().all(Option::is_none)
    }
}

fn comment_text(s: &str) -> Option<String> {
    let c = s.trim_start_matches([' ', '\t', ',']).strip_prefix('#')?;
    Some(c.strip_prefix(' ').unwrap_or(c).trim_end().to_string())
}

fn gap(text: &str) -> Gap {
    let mut segs = text.split('\n');
    let same_line = segs.next().and_then(comment_text);
    let mut lines: Vec<Option<String>> = Vec::new();
    let rest: Vec<&str> = segs.collect();
    // The last segment runs up to the next item, so it holds no comment.
    for seg in rest.iter().take(rest.len().saturating_sub(1)) {
        let c = comment_text(seg);
        if c.is_some() || !matches!(lines.last(), Some(None)) {
            lines.push(c);
        }
    }
    Gap { same_line, lines }
}

/// `line`, then a `// c` comment, aligned when it fits.
fn attach(line: &mut String, c: &str) {
    let width = line.chars().count();
    let pad = if width + 2 <= COMMENT_COLUMN {
        COMMENT_COLUMN - width
    } else {
        2
    };
    line.push_str(&" ".repeat(pad));
    line.push_str("// ");
    line.push_str(c);
    let trimmed = line.trim_end().len();
    line.truncate(trimmed);
}

/// The statement forms a node is printed in.
enum Form<'n> {
    Set(&'n str, &'n Val),
    Call(&'n str),
    If(&'n Val, &'n Block, Option<&'n Block>),
    Loop(&'n Val, &'n Block),
    Choose(&'n [Choice]),
    Op,
}

fn field<'n>(n: &'n Node, k: &str) -> Option<&'n Val> {
    n.fields.iter().find(|f| f.key == k).map(|f| &f.val)
}

fn only(n: &Node, keys: &[&str]) -> bool {
    n.fields.iter().all(|f| keys.contains(&f.key.as_str()))
}

fn form<'n>(n: &'n Node, functions: &[String]) -> Form<'n> {
    let ops = |k| match field(n, k) {
        Some(Val::Ops(b)) => Some(b),
        _ => None,
    };
    let plain = |k| field(n, k).filter(|v| !matches!(v, Val::Ops(_) | Val::Choices(_)));
    match n.name.as_str() {
        "set" if only(n, &["var", "value"]) => match (field(n, "var"), plain("value")) {
            (Some(Val::Str(v)), Some(value))
                if is_identifier(v) && !KEYWORDS.contains(&v.as_str()) =>
            {
                Form::Set(v, value)
            }
            _ => Form::Op,
        },
        "call" if only(n, &["fn"]) => match field(n, "fn") {
            Some(Val::Str(f))
                if functions.contains(f)
                    && !KEYWORDS.contains(&f.as_str())
                    && !signatures().any(|s| s.name == f) =>
            {
                Form::Call(f)
            }
            _ => Form::Op,
        },
        "if" if only(n, &["cond", "then", "else"]) => match (plain("cond"), ops("then")) {
            (Some(c), Some(t)) if field(n, "else").is_none() || ops("else").is_some() => {
                Form::If(c, t, ops("else"))
            }
            _ => Form::Op,
        },
        "loop" if only(n, &["count", "body"]) => match (plain("count"), ops("body")) {
            (Some(c), Some(b)) => Form::Loop(c, b),
            _ => Form::Op,
        },
        "choose" if only(n, &["options"]) => match field(n, "options") {
            Some(Val::Choices(cs)) => Form::Choose(cs),
            _ => Form::Op,
        },
        _ => Form::Op,
    }
}

/// Whether op field `key` takes an integer as well as a string, asked of
/// the op deserializer itself so that no list of fields can drift.
fn takes_integer(key: &str) -> bool {
    is_identifier(key) && toml::from_str::<RawOp>(&format!("op = \"x\"\n{key} = 1\n")).is_ok()
}

/// Whether `s` has two words in a row, as prose has and no expression or
/// duration does: such text reads better quoted.
fn two_words(s: &str) -> bool {
    let words: Vec<bool> = s
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c.is_whitespace()))
        .flat_map(|chunk| chunk.split_whitespace().map(|_| true).chain([false]))
        .collect();
    words.windows(2).any(|w| w[0] && w[1])
}

/// `s` as a string literal of the code syntax.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn string(s: &str) -> String {
    // `:` and `;` never occur in expressions or durations; names with
    // them (histograms such as "online: per CPU") read better quoted.
    let bare = !s.is_empty()
        && !two_words(s)
        && !s.contains(['\n', '\r', '"', ':', ';'])
        && s.trim() == s
        && read_value(s).is_some_and(|v| v == Val::Str(s.to_string()));
    if bare {
        s.to_string()
    } else {
        quote(s)
    }
}

impl Printer<'_> {
    /// The gaps of a TOML array spanning `span` with items at `items`:
    /// before each item, and after the last. Empty without `src`, or when
    /// the span is not a TOML array's.
    fn gaps(&self, span: &std::ops::Range<usize>, items: &[std::ops::Range<usize>]) -> Vec<Gap> {
        let empty = || (0..=items.len()).map(|_| Gap::default()).collect();
        let Some(src) = self.src else { return empty() };
        let whole = src.get(span.clone()).unwrap_or("");
        if !whole.starts_with('[') || !whole.ends_with(']') {
            return empty();
        }
        let mut bounds = vec![span.start + 1];
        for r in items {
            bounds.push(r.start);
            bounds.push(r.end);
        }
        bounds.push(span.end - 1);
        bounds
            .chunks(2)
            .map(|c| src.get(c[0]..c[1]).map_or_else(Gap::default, gap))
            .collect()
    }

    fn comment_line(&mut self, indent: usize, c: &Option<String>) {
        match c {
            Some(c) => {
                self.comments += 1;
                self.lines.push(
                    format!("{}// {c}", " ".repeat(indent))
                        .trim_end()
                        .to_string(),
                );
            }
            None => self.lines.push(String::new()),
        }
    }

    fn trailing(&mut self, c: &Option<String>) {
        if let (Some(c), Some(last)) = (c, self.lines.last_mut()) {
            attach(last, c);
            self.comments += 1;
        }
    }

    /// Prints the items of `b`; returns the comment on the line of its
    /// opening bracket, for the caller to put on the opener's line.
    fn block(&mut self, b: &Block, indent: usize) -> Result<Option<String>, String> {
        let spans: Vec<_> = b.items.iter().map(|n| n.span.clone()).collect();
        let gaps = self.gaps(&b.span, &spans);
        for (i, n) in b.items.iter().enumerate() {
            // No blank line at the top of a block.
            for l in gaps[i].lines.iter().filter(|l| l.is_some() || i > 0) {
                self.comment_line(indent, l);
            }
            let first = self.lines.len();
            self.stmt(n, indent)?;
            // The comment after an op written on one line speaks of all of
            // it: put it on the first line, by the op's name.
            let one_line = self
                .src
                .and_then(|s| s.get(n.span.clone()))
                .is_some_and(|t| !t.contains('\n'));
            match &gaps[i + 1].same_line {
                Some(c) if one_line && self.lines.len() > first + 1 => {
                    attach(&mut self.lines[first], c);
                    self.comments += 1;
                }
                c => self.trailing(c),
            }
        }
        // The last gap: comments before the closing bracket. (For an empty
        // block it is also the first, whose same-line comment is the
        // opener's.)
        for l in gaps[b.items.len()].lines.iter().flatten() {
            self.comment_line(indent, &Some(l.clone()));
        }
        Ok(gaps[0].same_line.clone())
    }

    /// `head {`, the block, `}`; `{}` for an empty block without comments.
    fn braced(&mut self, head: String, b: &Block, indent: usize) -> Result<(), String> {
        let at = self.lines.len();
        self.lines.push(format!("{head} {{"));
        let opener = self.block(b, indent + INDENT)?;
        if self.lines.len() == at + 1 && opener.is_none() {
            self.lines[at] = format!("{head} {{}}");
            return Ok(());
        }
        if let Some(c) = opener {
            attach(&mut self.lines[at], &c);
            self.comments += 1;
        }
        self.lines.push(format!("{}}}", " ".repeat(indent)));
        Ok(())
    }

    fn has_comments(&self, b: &Block) -> bool {
        let spans: Vec<_> = b.items.iter().map(|n| n.span.clone()).collect();
        !self.gaps(&b.span, &spans).iter().all(Gap::is_empty)
    }

    /// The value of field `key`: a string holding an integer is written
    /// as the integer where the field takes integers too (an expression,
    /// whose number and text mean the same), so `x = 0;`, not `x = "0";`.
    fn field_value(&self, key: &str, v: &Val) -> Result<String, String> {
        match v {
            Val::Str(s)
                if s.parse::<i64>().is_ok_and(|n| n.to_string() == *s) && takes_integer(key) =>
            {
                Ok(s.clone())
            }
            v => self.value(v),
        }
    }

    fn value(&self, v: &Val) -> Result<String, String> {
        Ok(match v {
            Val::Str(s) => string(s),
            Val::Int(i) => i.clone(),
            Val::Bool(b) => b.to_string(),
            Val::Ops(b) => {
                let mut p = Printer {
                    src: None,
                    functions: self.functions,
                    lines: Vec::new(),
                    comments: 0,
                };
                p.block(b, 0)?;
                if p.lines.is_empty() {
                    "{}".into()
                } else {
                    format!(
                        "{{ {} }}",
                        p.lines
                            .iter()
                            .map(|l| l.trim())
                            .collect::<Vec<_>>()
                            .join(" ")
                    )
                }
            }
            Val::Choices(_) => {
                return Err("`options` can only be written as `choose { WEIGHT: ... }`".into())
            }
        })
    }

    fn stmt(&mut self, n: &Node, indent: usize) -> Result<(), String> {
        let pad = " ".repeat(indent);
        match form(n, self.functions) {
            Form::Set(var, value) => {
                let v = self.field_value("value", value)?;
                self.lines.push(format!("{pad}{var} = {v};"));
            }
            Form::Call(f) => self.lines.push(format!("{pad}{f}();")),
            Form::If(cond, then, else_) => self.if_stmt(cond, then, else_, indent, "")?,
            Form::Loop(count, body) => {
                let head = match count {
                    Val::Str(s) if s == "forever" => "for (;;)".to_string(),
                    c => format!("loop ({})", self.field_value("count", c)?),
                };
                self.braced(format!("{pad}{head}"), body, indent)?;
            }
            Form::Choose(cs) => self.choose(n, cs, indent)?,
            Form::Op => self.op(n, indent)?,
        }
        Ok(())
    }

    fn if_stmt(
        &mut self,
        cond: &Val,
        then: &Block,
        else_: Option<&Block>,
        indent: usize,
        prefix: &str,
    ) -> Result<(), String> {
        let pad = " ".repeat(indent);
        let c = self.value(cond)?;
        let at = self.lines.len();
        self.lines.push(format!("{pad}{prefix}if ({c}) {{"));
        if let Some(o) = self.block(then, indent + INDENT)? {
            attach(&mut self.lines[at], &o);
            self.comments += 1;
        }
        let Some(e) = else_ else {
            self.lines.push(format!("{pad}}}"));
            return Ok(());
        };
        // `else if`: an else block of one `if`, with nothing to say.
        if let [inner] = &e.items[..] {
            if let Form::If(c2, t2, e2) = form(inner, self.functions) {
                if !self.has_comments(e) {
                    return self.if_stmt(c2, t2, e2, indent, "} else ");
                }
            }
        }
        let at = self.lines.len();
        self.lines.push(format!("{pad}}} else {{"));
        if let Some(o) = self.block(e, indent + INDENT)? {
            attach(&mut self.lines[at], &o);
            self.comments += 1;
        }
        self.lines.push(format!("{pad}}}"));
        Ok(())
    }

    fn choose(&mut self, n: &Node, cs: &[Choice], indent: usize) -> Result<(), String> {
        let pad = " ".repeat(indent);
        let inner = " ".repeat(indent + INDENT);
        let options = n
            .fields
            .iter()
            .find(|f| f.key == "options")
            .map(|f| f.span.clone());
        let spans: Vec<_> = cs.iter().map(|c| c.span.clone()).collect();
        let gaps = match &options {
            Some(s) => self.gaps(s, &spans),
            None => (0..=cs.len()).map(|_| Gap::default()).collect(),
        };
        let at = self.lines.len();
        self.lines.push(format!("{pad}choose {{"));
        if let Some(o) = &gaps[0].same_line {
            attach(&mut self.lines[at], o);
            self.comments += 1;
        }
        for (i, c) in cs.iter().enumerate() {
            for l in gaps[i].lines.iter().filter(|l| l.is_some() || i > 0) {
                self.comment_line(indent + INDENT, l);
            }
            let label = format!("{inner}{}:", c.weight);
            let simple = !self.has_comments(&c.body);
            match &c.body.items[..] {
                [] if simple => self.lines.push(format!("{label} {{}}")),
                [one] if simple => {
                    let mark = self.lines.len();
                    self.stmt(one, 0)?;
                    if self.lines.len() == mark + 1 {
                        let s = self.lines.pop().unwrap_or_default();
                        self.lines.push(format!("{label} {s}"));
                    } else {
                        self.lines.truncate(mark);
                        self.braced(label, &c.body, indent + INDENT)?;
                    }
                }
                _ => self.braced(label, &c.body, indent + INDENT)?,
            }
            self.trailing(&gaps[i + 1].same_line);
        }
        for l in gaps[cs.len()].lines.iter().flatten() {
            self.comment_line(indent + INDENT, &Some(l.clone()));
        }
        self.lines.push(format!("{pad}}}"));
        Ok(())
    }

    fn op(&mut self, n: &Node, indent: usize) -> Result<(), String> {
        let pad = " ".repeat(indent);
        if !is_identifier(&n.name) || KEYWORDS.contains(&n.name.as_str()) {
            return Err(format!("op `{}` cannot be written as code", n.name));
        }
        let sig = signatures().find(|s| s.name == n.name);
        let order: Vec<&str> = sig.as_ref().map_or(Vec::new(), |s| {
            s.required
                .iter()
                .copied()
                .filter(|f| !STRUCTURAL.contains(f))
                .collect()
        });
        let takes_body = sig
            .as_ref()
            .is_some_and(|s| s.required.contains(&"body") || s.optional.contains(&"body"));
        let body = match field(n, "body") {
            Some(Val::Ops(b)) if takes_body => Some(b),
            _ => None,
        };
        let mut args = Vec::new();
        let mut positional = 0;
        for k in &order {
            match field(n, k) {
                Some(v) if !matches!(v, Val::Ops(_)) => {
                    args.push(self.field_value(k, v)?);
                    positional += 1;
                }
                _ => break,
            }
        }
        for f in &n.fields {
            let is_positional = order[..positional].contains(&f.key.as_str());
            let is_body = f.key == "body" && body.is_some();
            if is_positional || is_body {
                continue;
            }
            if !is_identifier(&f.key) {
                return Err(format!(
                    "field `{}` of op `{}` cannot be written as code",
                    f.key, n.name
                ));
            }
            args.push(format!("{} = {}", f.key, self.field_value(&f.key, &f.val)?));
        }
        let head = format!("{pad}{}({})", n.name, args.join(", "));
        match body {
            Some(b) => self.braced(head, b, indent),
            None => {
                self.lines.push(format!("{head};"));
                Ok(())
            }
        }
    }
}
