//! Code-path text to op trees ([`Node`]): statements are ops in call
//! syntax, mapped onto the op's fields through the op registry.
//!
//! ```text
//! code    := stmt*
//! stmt    := ";" | "{" stmt* "}"                      (a block: its statements)
//!          | "if" "(" VALUE ")" body ("else" body)?
//!          | "for" "(" ";" ";" ")" body                (loop forever)
//!          | "choose" "{" (INT ":" stmt*)* "}"
//!          | "break" ";"                               (leave the innermost loop)
//!          | IDENT "=" VALUE ";"                       (set)
//!          | IDENT "(" args? ")" (body | ";")          (an op, or a call of a function)
//! body    := "{" stmt* "}" | stmt
//! args    := arg ("," arg)* ","?
//! arg     := (IDENT "=")? (VALUE | "{" stmt* "}")
//! VALUE   := a string literal, or the source text up to the next top-level
//!            "," or ")" (or ";" after "="): an integer if it is one,
//!            true/false, else a string
//! ```

mod call;

pub(super) use call::read_value;

use std::ops::Range;

use super::lexer::{lex, Tok, Token};
use super::{Block, Choice, CodeErr, Field, Node, Val, STRUCTURAL};
use crate::ops::OpSig;

/// Nesting deeper than this is refused rather than risk the stack.
const MAX_DEPTH: usize = 100;

/// Parses a code path; `functions` are the names a bare call may name.
pub(super) fn parse(src: &str, functions: &[String]) -> Result<Block, CodeErr> {
    let toks = lex(src)?;
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        functions,
        depth: 0,
        misindented: None,
    };
    let items = p.stmts(End::Eof)?;
    Ok(Block {
        span: 0..src.len(),
        items,
    })
}

/// What ends a list of statements.
#[derive(Clone, Copy, PartialEq)]
enum End {
    Eof,
    Brace,
    /// `}` or the next `WEIGHT:` label of a `choose`.
    Label,
}

struct Parser<'s> {
    src: &'s str,
    toks: Vec<Token>,
    pos: usize,
    functions: &'s [String],
    depth: usize,
    /// The first block whose `}` is indented unlike its opening line,
    /// with the op it belongs to: the likely culprit when a `}` is missing.
    misindented: Option<(Range<usize>, String)>,
}

/// The fields an op's positional arguments fill, in order.
pub(super) fn positional_fields(sig: &OpSig) -> Vec<&'static str> {
    sig.required
        .iter()
        .chain(sig.optional)
        .copied()
        .filter(|f| !STRUCTURAL.contains(f))
        .collect()
}

/// The names in `names` closest to `word`, if one is close enough to be a
/// plausible typo.
pub(super) fn nearest<'a>(word: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for n in names {
        let d = edit_distance(word, n);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, n));
        }
    }
    let (d, n) = best?;
    (d <= word.chars().count().div_ceil(3).max(1) || n.contains(word) && word.len() >= 3)
        .then_some(n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.toks[self.pos]
    }

    fn peek2(&self) -> &Token {
        &self.toks[(self.pos + 1).min(self.toks.len() - 1)]
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn text(&self, t: &Token) -> &str {
        &self.src[t.span.clone()]
    }

    /// How a token is named in "found ..." messages.
    fn found(&self, t: &Token) -> String {
        match t.tok {
            Tok::Eof => "end of code".into(),
            _ => format!("`{}`", self.text(t)),
        }
    }

    fn expect(&mut self, c: char, what: &str) -> Result<Token, CodeErr> {
        let t = self.peek().clone();
        if t.is(c) {
            return Ok(self.bump());
        }
        Err(self.expected(&format!("`{c}` {what}"), &t))
    }

    fn expected(&self, what: &str, t: &Token) -> CodeErr {
        let mut e = CodeErr::new(
            t.span.clone(),
            format!("expected {what}, found {}", self.found(t)),
        );
        if t.tok == Tok::Sym && self.text(t) == "#" {
            e = e.help("comments in code are `// ...` or `/* ... */`");
        }
        e
    }

    /// The 0-based column of the first non-blank character of the line
    /// holding `at`.
    fn indent_of(&self, at: usize) -> usize {
        let line_start = self.src[..at].rfind('\n').map_or(0, |i| i + 1);
        let line = &self.src[line_start..];
        line.len() - line.trim_start_matches([' ', '\t']).len()
    }

    fn enter(&mut self, at: &Range<usize>) -> Result<(), CodeErr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(CodeErr::new(
                at.clone(),
                format!("code is nested too deeply (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(())
    }

    fn stmts(&mut self, end: End) -> Result<Vec<Node>, CodeErr> {
        let mut out = Vec::new();
        loop {
            let t = self.peek();
            match (&t.tok, end) {
                // An unclosed block is reported by its opener.
                (Tok::Eof, _) => return Ok(out),
                (Tok::Punct('}'), End::Brace | End::Label) => return Ok(out),
                (Tok::Number, End::Label) if self.peek2().is(':') => return Ok(out),
                (Tok::Punct('}'), End::Eof) => {
                    return Err(CodeErr::new(
                        t.span.clone(),
                        "unexpected `}`: no block is open here",
                    ))
                }
                _ => self.stmt(&mut out)?,
            }
        }
    }

    /// `{ stmt* }`, from its `{`; `owner` names it in messages.
    fn block(&mut self, owner: &str) -> Result<Block, CodeErr> {
        let open = self.bump();
        self.enter(&open.span)?;
        let items = self.stmts(End::Brace)?;
        let close = self.peek().clone();
        if !close.is('}') {
            // End of code: the block is unclosed. If a `}` was indented
            // unlike its `{`, that block probably took this one's `}`.
            let (at, who, help) = match self.misindented.clone() {
                Some((at, who)) => (at, who, "its `}` seems to be missing: a `}` indented like an outer block's closes it instead"),
                None => (open.span.clone(), owner.to_string(), "add a `}` after the block's last statement"),
            };
            return Err(CodeErr::new(
                at,
                format!("expected `}}` to close this block of `{who}`, found end of code"),
            )
            .help(help));
        }
        self.bump();
        self.depth -= 1;
        if self.misindented.is_none()
            && self.indent_of(open.span.start) != self.indent_of(close.span.start)
            && self.src[..close.span.start]
                .trim_end_matches([' ', '\t'])
                .ends_with('\n')
        {
            self.misindented = Some((open.span.clone(), owner.to_string()));
        }
        Ok(Block {
            span: open.span.start..close.span.end,
            items,
        })
    }

    /// A body: a block, or one statement.
    fn body(&mut self, owner: &str) -> Result<Block, CodeErr> {
        let t = self.peek().clone();
        if t.is('{') {
            return self.block(owner);
        }
        if t.tok == Tok::Eof {
            return Err(self.expected(&format!("`{{` or a statement as the body of `{owner}`"), &t));
        }
        self.enter(&t.span)?;
        let mut items = Vec::new();
        self.stmt(&mut items)?;
        self.depth -= 1;
        let end = self.toks[self.pos.saturating_sub(1)]
            .span
            .end
            .max(t.span.start);
        Ok(Block {
            span: t.span.start..end,
            items,
        })
    }

    fn stmt(&mut self, out: &mut Vec<Node>) -> Result<(), CodeErr> {
        let t = self.peek().clone();
        match &t.tok {
            Tok::Punct(';') => {
                self.bump();
                Ok(())
            }
            Tok::Punct('{') => {
                let b = self.block("{")?;
                out.extend(b.items);
                Ok(())
            }
            Tok::Ident => {
                let word = self.text(&t).to_string();
                let next = self.peek2().clone();
                match word.as_str() {
                    "if" => out.push(self.if_stmt()?),
                    "for" => out.push(self.for_stmt()?),
                    "choose" if next.is('{') => out.push(self.choose()?),
                    "break" if next.is(';') => {
                        let kw = self.bump();
                        self.bump();
                        out.push(Node {
                            span: kw.span.clone(),
                            name: "break".into(),
                            name_span: kw.span,
                            fields: Vec::new(),
                        });
                    }
                    "else" => return Err(CodeErr::new(t.span, "`else` without an `if` before it")),
                    _ if next.is('=') => out.push(self.assignment()?),
                    _ if next.is('(') => out.push(self.call()?),
                    _ => {
                        return Err(self
                            .expected(&format!("`(` or `=` after `{word}`"), &next)
                            .help(format!("ops are written like calls: `{word}(...);`")))
                    }
                }
                Ok(())
            }
            _ => Err(self.expected("a statement", &t)),
        }
    }

    fn if_stmt(&mut self) -> Result<Node, CodeErr> {
        let kw = self.bump();
        self.expect('(', "after `if`")?;
        let (cond, cond_span) = self.value(&[')'], "a condition")?;
        self.expect(')', "to close the condition")?;
        let then = self.body("if")?;
        let mut fields = vec![
            Field::new("cond", cond_span.clone(), cond, cond_span),
            Field::new("then", then.span.clone(), Val::Ops(then.clone()), then.span),
        ];
        let mut end = fields[1].span.end;
        let t = self.peek().clone();
        if t.tok == Tok::Ident && self.text(&t) == "else" {
            self.bump();
            let b = self.body("else")?;
            end = b.span.end;
            fields.push(Field::new("else", t.span, Val::Ops(b.clone()), b.span));
        }
        Ok(Node {
            span: kw.span.start..end,
            name: "if".into(),
            name_span: kw.span,
            fields,
        })
    }

    fn for_stmt(&mut self) -> Result<Node, CodeErr> {
        let kw = self.bump();
        let help =
            "the only `for` is `for (;;)`, a loop forever; write `loop (N) { ... }` for N times";
        for (c, what) in [
            ('(', "after `for`"),
            (';', "in `for (;;)`"),
            (';', "in `for (;;)`"),
        ] {
            self.expect(c, what).map_err(|e| e.help(help))?;
        }
        let close = self
            .expect(')', "in `for (;;)`")
            .map_err(|e| e.help(help))?;
        let head = kw.span.start..close.span.end;
        let body = self.body("for")?;
        Ok(Node {
            span: kw.span.start..body.span.end,
            name: "loop".into(),
            name_span: kw.span,
            fields: vec![
                Field::new("count", head.clone(), Val::Str("forever".into()), head),
                Field::new("body", body.span.clone(), Val::Ops(body.clone()), body.span),
            ],
        })
    }

    fn choose(&mut self) -> Result<Node, CodeErr> {
        let kw = self.bump();
        let open = self.bump();
        self.enter(&open.span)?;
        let mut options = Vec::new();
        loop {
            let t = self.peek().clone();
            if t.is('}') {
                break;
            }
            if t.tok != Tok::Number || !self.peek2().is(':') {
                if t.tok == Tok::Eof {
                    let e = CodeErr::new(
                        open.span.clone(),
                        "expected `}` to close this block of `choose`, found end of code",
                    );
                    return Err(e);
                }
                return Err(self
                    .expected("a weight such as `3:`", &t)
                    .help("`choose { 3: ...; 1: ... }` runs one option, picked by weight"));
            }
            let text = self.text(&t).to_string();
            let Ok(w) = text.parse::<i64>() else {
                return Err(CodeErr::new(
                    t.span,
                    format!("expected an integer weight, found `{text}`"),
                ));
            };
            self.bump();
            let colon = self.bump();
            let items = self.stmts(End::Label)?;
            let end = self.toks[self.pos - 1].span.end;
            options.push(Choice {
                span: t.span.start..end,
                weight: w.to_string(),
                weight_span: t.span.clone(),
                body: Block {
                    span: colon.span.end..end.max(colon.span.end),
                    items,
                },
            });
        }
        let close = self.bump();
        self.depth -= 1;
        let span = open.span.start..close.span.end;
        Ok(Node {
            span: kw.span.start..close.span.end,
            name: "choose".into(),
            name_span: kw.span,
            fields: vec![Field::new(
                "options",
                span.clone(),
                Val::Choices(options),
                span,
            )],
        })
    }

    fn assignment(&mut self) -> Result<Node, CodeErr> {
        let var = self.bump();
        self.bump();
        let (value, vspan) = self.value(&[';'], "a value")?;
        self.expect(';', "after the assignment")?;
        let name = self.text(&var).to_string();
        Ok(Node {
            span: var.span.start..vspan.end,
            name: "set".into(),
            name_span: var.span.clone(),
            fields: vec![
                Field::new("var", var.span.clone(), Val::Str(name), var.span),
                Field::new("value", vspan.clone(), value, vspan),
            ],
        })
    }
}

/// Words with a meaning of their own at the start of a statement, so no
/// op or variable can be written under them. (`choose` is one only before
/// `{`: `choose(...)` is a call.)
pub(super) const KEYWORDS: &[&str] = &["if", "else", "for"];
