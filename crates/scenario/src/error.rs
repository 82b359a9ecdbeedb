//! Errors with source locations, and the registry of texts spans point into.
//!
//! Every span the scenario crate handles is a byte range in one *virtual*
//! text: the scenario file comes first (offset 0), then each machine preset
//! or profile and each `--set` value gets its own region after it. A span
//! therefore says by itself which text it belongs to, which lets values from
//! several texts be merged into one TOML table and still be reported where
//! they were written.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A scenario that failed to load or compile, with where the problem is.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    pub message: String,
    pub location: Location,
    pub help: Option<String>,
}

/// Where a [`ScenarioError`] is.
#[derive(Clone, Debug, PartialEq)]
pub enum Location {
    /// A whole file (e.g. it cannot be read).
    File { path: PathBuf },
    /// A place in a text: the scenario file, a machine profile, or a preset.
    Text {
        /// How the text is named in messages: a path, or `<preset NAME>`.
        name: String,
        /// 1-based.
        line: usize,
        /// 1-based, counted in characters.
        column: usize,
        /// The source line, without its line terminator.
        line_text: String,
        /// How many characters of the line the problem spans (at least 1).
        width: usize,
    },
    /// The value of a `--set KEY=VALUE` option.
    Set { key: String, value: String },
}

impl ScenarioError {
    pub(crate) fn file(path: &Path, message: impl Into<String>) -> Self {
        ScenarioError {
            message: message.into(),
            location: Location::File {
                path: path.to_path_buf(),
            },
            help: None,
        }
    }

    /// The 1-based line and column, for errors located in a text.
    pub fn line_col(&self) -> Option<(usize, usize)> {
        match &self.location {
            Location::Text { line, column, .. } => Some((*line, *column)),
            _ => None,
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Location::File { path } => write!(f, "{}: error: {}", path.display(), self.message)?,
            Location::Set { key, value } => {
                let (value, _, _) = excerpt(value, 1, 1);
                write!(f, "--set {key}={value}: {}", self.message)?
            }
            Location::Text {
                name,
                line,
                column,
                line_text,
                width,
            } => {
                writeln!(f, "{name}:{line}:{column}: error: {}", self.message)?;
                let gutter = line.to_string().len();
                writeln!(f, "{:gutter$} |", "")?;
                let (shown, column, width) = excerpt(line_text, *column, *width);
                writeln!(f, "{line} | {shown}")?;
                // Keep tabs so the caret lines up with the text above.
                let pad: String = shown
                    .chars()
                    .take(column - 1)
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                write!(f, "{:gutter$} | {pad}{}", "", "^".repeat(width))?;
            }
        }
        if let Some(help) = &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

/// The most characters of a source line an error shows: a longer line (a
/// megabyte of code on one line) is shown around the error, cut with
/// `...` on either side, never echoed whole.
const SHOWN_CHARS: usize = 160;

/// The part of `line` an error shows, with the 1-based `column` and the
/// `width` of the caret within it.
fn excerpt(line: &str, column: usize, width: usize) -> (String, usize, usize) {
    let count = line.chars().count();
    if count <= SHOWN_CHARS {
        return (line.to_string(), column, width);
    }
    let from = column.saturating_sub(1).saturating_sub(SHOWN_CHARS / 4);
    let to = (from + SHOWN_CHARS).min(count);
    let mut shown = String::new();
    let lead = if from > 0 { "..." } else { "" };
    shown.push_str(lead);
    shown.extend(line.chars().skip(from).take(to - from));
    if to < count {
        shown.push_str(&format!("... ({count} characters in all)"));
    }
    let c0 = column.saturating_sub(1);
    let width = width.min(to.saturating_sub(c0)).max(1);
    (shown, c0 - from + lead.len() + 1, width)
}

/// An error at a span of the virtual text, before it is rendered.
#[derive(Clone, Debug)]
pub(crate) struct Diag {
    pub span: Range<usize>,
    pub message: String,
    pub help: Option<String>,
}

impl Diag {
    pub fn new(span: Range<usize>, message: impl Into<String>) -> Self {
        Diag {
            span,
            message: message.into(),
            help: None,
        }
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// From a TOML parse or deserialization error; `fallback` is used when
    /// the error carries no span. `base` is the offset of the text parsed.
    pub fn from_toml(e: &toml::de::Error, base: usize, fallback: Range<usize>) -> Self {
        let span = match e.span() {
            Some(s) => s.start + base..s.end + base,
            None => fallback,
        };
        Diag::new(span, e.message().trim_end().to_string())
    }
}

impl Diag {
    /// From an error parsing `text` (at `base` in the virtual text). The
    /// parser's "recursion limit" for a dotted key of 80 parts or more
    /// carries no span: it is located at the key here.
    pub fn from_parse(e: &toml::de::Error, text: &str, base: usize) -> Self {
        if e.span().is_none() && e.message().contains("recursion limit") {
            if let Some((span, parts)) = too_deep_key(text) {
                return Diag::new(
                    span.start + base..span.end + base,
                    format!(
                        "this key has {parts} dotted parts; TOML keys here nest at most {} deep",
                        TOML_DEPTH - 1
                    ),
                )
                .help(
                    "a scenario's keys are a few levels deep (`tasks.NAME.vars.X`); check the key",
                );
            }
        }
        Diag::from_toml(e, base, base..base)
    }
}

/// The TOML parser's nesting limit (its `LIMIT`).
const TOML_DEPTH: usize = 80;

/// The first key (of `KEY = ...` or a `[TABLE]` header) with
/// [`TOML_DEPTH`] parts or more: its span and its number of parts.
fn too_deep_key(text: &str) -> Option<(Range<usize>, usize)> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start();
        let lead = line.len() - trimmed.len();
        let key = if let Some(h) = trimmed.strip_prefix('[') {
            let h = h.strip_prefix('[').unwrap_or(h);
            let end = h.find(']').unwrap_or(h.len());
            let from = trimmed.len() - h.len();
            (lead + from, &h[..end])
        } else {
            (lead, key_part(trimmed))
        };
        let parts = dots_outside_quotes(key.1) + 1;
        if parts >= TOML_DEPTH {
            let s = start + key.0;
            return Some((s..s + key.1.trim_end().len(), parts));
        }
    }
    None
}

/// The text before the first `=` outside quotes.
fn key_part(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '=') => return &line[..i],
            (None, '#') => return "",
            _ => {}
        }
    }
    ""
}

fn dots_outside_quotes(key: &str) -> usize {
    let mut quote = None;
    let mut n = 0;
    for c in key.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '.') => n += 1,
            _ => {}
        }
    }
    n
}

pub(crate) type DResult<T> = Result<T, Diag>;

/// An error inside a string value (an expression, a duration), as a byte
/// range of the string's content.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StrErr {
    pub range: Range<usize>,
    pub message: String,
    pub help: Option<String>,
}

impl StrErr {
    pub fn new(range: Range<usize>, message: impl Into<String>) -> Self {
        StrErr {
            range,
            message: message.into(),
            help: None,
        }
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The error at `span` of the virtual text, keeping its help.
    pub fn at(self, span: Range<usize>) -> Diag {
        Diag {
            span,
            message: self.message,
            help: self.help,
        }
    }
}

#[derive(Clone, Debug)]
enum Origin {
    File(String),
    Set { key: String, value: String },
}

#[derive(Clone, Debug)]
struct Source {
    origin: Origin,
    base: usize,
    text: String,
}

/// The texts spans point into.
#[derive(Clone, Debug)]
pub(crate) struct Sources {
    sources: Vec<Source>,
    /// The files read besides the scenario (machine profiles).
    pub files_read: Vec<PathBuf>,
}

impl Sources {
    pub fn new(path: &Path, text: &str) -> Self {
        Sources {
            sources: vec![Source {
                origin: Origin::File(path.display().to_string()),
                base: 0,
                text: text.to_string(),
            }],
            files_read: Vec::new(),
        }
    }

    fn next_base(&self) -> usize {
        let last = self
            .sources
            .last()
            .expect("the scenario file is always a source");
        last.base + last.text.len() + 1
    }

    /// Registers another file-like text (a preset or a profile); returns the
    /// offset to add to spans of that text.
    pub fn add_text(&mut self, name: String, text: &str) -> usize {
        let base = self.next_base();
        self.sources.push(Source {
            origin: Origin::File(name),
            base,
            text: text.to_string(),
        });
        base
    }

    /// Registers a `--set` value; returns the offset of its region.
    pub fn add_set(&mut self, key: &str, value: &str) -> usize {
        let base = self.next_base();
        self.sources.push(Source {
            origin: Origin::Set {
                key: key.to_string(),
                value: value.to_string(),
            },
            base,
            text: value.to_string(),
        });
        base
    }

    /// The key of the `--set` option whose value a span lies in, if any.
    pub fn set_key(&self, span: &Range<usize>) -> Option<&str> {
        match &self.find(span.start).origin {
            Origin::Set { key, .. } => Some(key),
            Origin::File(_) => None,
        }
    }

    fn find(&self, pos: usize) -> &Source {
        self.sources
            .iter()
            .rev()
            .find(|s| s.base <= pos)
            .unwrap_or(&self.sources[0])
    }

    /// The text a span covers, if it lies within one source.
    pub fn slice(&self, span: &Range<usize>) -> Option<&str> {
        let s = self.find(span.start);
        s.text
            .get(span.start - s.base..span.end.checked_sub(s.base)?)
    }

    /// The span of bytes `range` of `content`, a string value written at
    /// `span`: inside the quotes if the value is written without escapes,
    /// else the whole value.
    pub fn sub_span(
        &self,
        span: &Range<usize>,
        content: &str,
        range: Range<usize>,
    ) -> Range<usize> {
        let Some(raw) = self.slice(span) else {
            return span.clone();
        };
        let quote = if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
            3
        } else if raw.starts_with('"') || raw.starts_with('\'') {
            1
        } else {
            0
        };
        let inner = raw.get(quote..raw.len().saturating_sub(quote));
        let start = span.start + quote;
        if inner == Some(content) && range.end <= content.len() {
            start + range.start..start + range.end.max(range.start)
        } else {
            span.clone()
        }
    }

    pub fn render(&self, d: Diag) -> ScenarioError {
        let d = self.explain(d);
        let src = self.find(d.span.start);
        let location = match &src.origin {
            Origin::Set { key, value } => Location::Set {
                key: key.clone(),
                value: value.clone(),
            },
            Origin::File(name) => {
                let text = &src.text;
                let mut start = (d.span.start - src.base).min(text.len());
                while !text.is_char_boundary(start) {
                    start -= 1;
                }
                let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
                let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
                let line = text[..start].matches('\n').count() + 1;
                let column = text[line_start..start].chars().count() + 1;
                let line_text = text[line_start..line_end]
                    .trim_end_matches('\r')
                    .to_string();
                let end = d.span.end.saturating_sub(src.base).clamp(start, line_end);
                let width = text
                    .get(start..end)
                    .map_or(1, |s| s.trim_end_matches('\r').chars().count().max(1));
                Location::Text {
                    name: name.clone(),
                    line,
                    column,
                    line_text,
                    width,
                }
            }
        };
        ScenarioError {
            message: d.message,
            location,
            help: d.help,
        }
    }

    /// The TOML parser's terse messages, said with what the text shows:
    /// the duplicated key, the field and the type it expects, the limit.
    fn explain(&self, mut d: Diag) -> Diag {
        let src = self.find(d.span.start);
        let (lo, hi) = (
            d.span.start.saturating_sub(src.base),
            d.span.end.saturating_sub(src.base),
        );
        let at = src.text.get(lo..hi.max(lo)).unwrap_or("").trim();
        // The key of `KEY = VALUE` when the span is the value.
        let key = || {
            if let Origin::Set { key, .. } = &src.origin {
                return key.rsplit('.').next().map(str::to_string);
            }
            let before = src.text.get(..lo)?;
            let line = before.rsplit('\n').next()?.trim_end();
            let line = line.strip_suffix('=')?.trim_end();
            let k = line
                .rsplit(|c: char| c.is_whitespace() || c == '{' || c == ',')
                .next()?
                .trim_matches('"');
            (!k.is_empty()).then(|| k.to_string())
        };
        if d.message == "duplicate key" && !at.is_empty() {
            d.message = format!("duplicate key `{}`", at.trim_matches('"'));
            d.help
                .get_or_insert_with(|| "a key is given once in a table".into());
        } else if d.message == "cannot recurse further; max recursion depth met" {
            d.message =
                "arrays and inline tables nest too deeply (the TOML parser allows 80 levels)"
                    .to_string();
        } else if let Some((found, expected)) = d
            .message
            .strip_prefix("invalid type: ")
            .and_then(|m| m.rsplit_once(", expected "))
        {
            let wants = match expected {
                "i64" | "i32" | "u64" | "u32" | "u16" | "u8" | "usize" => "an integer".to_string(),
                "f64" | "f32" => "a number".to_string(),
                "a boolean" | "bool" => "`true` or `false`".to_string(),
                // serde names the raw struct; the user wrote a table.
                other if other.starts_with("struct Raw") => "a table `{ ... }`".to_string(),
                other => other.to_string(),
            };
            // A bare number where a time is wanted: say it needs a unit.
            let number = (wants == "a string"
                && (found.starts_with("integer") || found.starts_with("floating point")))
            .then(|| found.rsplit('`').nth(1).unwrap_or(at).to_string());
            let callee = src.text.get(..lo).and_then(|b| {
                let b = b.trim_end().strip_suffix('(')?;
                let name_at = b
                    .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(0, |i| i + 1);
                Some(b[name_at..].to_string())
            });
            let time_key = key().is_some_and(|k| TIME_KEYS.contains(&k.as_str()));
            let time_call = callee.as_deref().is_some_and(|c| TIME_CALLS.contains(&c));
            d.message = match (key(), &number) {
                (_, Some(n)) if time_call => format!(
                    "`{}({n})`: a time needs a unit: write `{}({n}ns)` (or us, ms, s)",
                    callee.as_deref().unwrap_or(""),
                    callee.as_deref().unwrap_or("")
                ),
                (Some(k), Some(n)) if time_key => format!(
                    "`{k} = {n}`: a time needs a unit: write `{k} = \"{n}ns\"` (or us, ms, s)"
                ),
                (Some(k), _) => format!("`{k}` expects {wants}, not {found}"),
                (None, _) => format!("expected {wants}, not {found}"),
            };
            if let (Some(n), false, false) = (&number, time_call, time_key) {
                d.help.get_or_insert_with(|| {
                    format!("if `{n}` is a time, it needs a unit: `\"{n}ns\"` (or us, ms, s)")
                });
            }
        }
        d
    }
}

/// Keys whose value is a time (`time = "1us"`), and calls in code text
/// whose argument is one (`work(1us)`): a bare number there lacks a unit.
const TIME_KEYS: &[&str] = &[
    "time",
    "duration",
    "warmup",
    "sched_slice",
    "wakeup_granularity",
    "latency_window",
    "quota",
    "period",
];
const TIME_CALLS: &[&str] = &[
    "work", "sleep", "udelay", "ndelay", "mdelay", "msleep", "spin",
];

/// `a`, `b` and `c`: a list of names for messages.
pub(crate) fn list<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> String {
    let names: Vec<String> = names
        .into_iter()
        .map(|n| format!("`{}`", n.as_ref()))
        .collect();
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}
