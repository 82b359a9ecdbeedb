//! Calls: an op (or a function) and its arguments, mapped onto the op's
//! fields through the op registry, each argument's value read as the
//! grammar in the parent module has it.

use std::ops::Range;

use super::super::lexer::{lex, Tok};
use super::super::{CodeErr, Field, Node, Val};
use super::{nearest, positional_fields, Parser};
use crate::ops::{signatures, OpSig};

fn takes(sig: &OpSig, field: &str) -> bool {
    sig.required.contains(&field)
        || sig.optional.contains(&field)
        || sig.aliases.iter().any(|(a, _)| *a == field)
}

impl Parser<'_> {
    pub(super) fn call(&mut self) -> Result<Node, CodeErr> {
        let name_tok = self.bump();
        let name = self.text(&name_tok).to_string();
        let sig = signatures().find(|s| s.name == name);
        self.bump();
        let args = self.args(&name)?;
        let close = self.expect(')', &format!("to close the arguments of `{name}`"))?;
        let mut span = name_tok.span.start..close.span.end;
        let Some(sig) = sig else {
            if !self.functions.contains(&name) {
                let names = signatures()
                    .map(|s| s.name)
                    .chain(self.functions.iter().map(String::as_str));
                let mut e = CodeErr::new(name_tok.span.clone(), format!("unknown op `{name}`"));
                e = match nearest(&name, names) {
                    Some(n) => e.help(format!("did you mean `{n}`?")),
                    None => e.help("see the op table in docs/scenario-format.md; a function of `[functions]` is called as `NAME();`"),
                };
                return Err(e);
            }
            if let Some((_, a)) = args.first() {
                return Err(CodeErr::new(
                    a.span.clone(),
                    format!("function `{name}` takes no arguments"),
                ));
            }
            self.expect(';', &format!("after `{name}()`"))?;
            return Ok(Node {
                span,
                name: "call".into(),
                name_span: name_tok.span.clone(),
                fields: vec![Field::new(
                    "fn",
                    name_tok.span.clone(),
                    Val::Str(name),
                    name_tok.span,
                )],
            });
        };
        let order = positional_fields(&sig);
        let mut fields: Vec<Field> = Vec::new();
        let mut next = 0;
        let mut named_seen = false;
        for (key, f) in args {
            let key = match key {
                Some(k) => {
                    named_seen = true;
                    k
                }
                None => {
                    if named_seen {
                        return Err(CodeErr::new(
                            f.span,
                            "a positional argument cannot follow a named one",
                        ));
                    }
                    let Some(k) = order.get(next) else {
                        let list = order.join(", ");
                        let msg = if order.is_empty() {
                            format!("`{name}` takes no positional arguments")
                        } else {
                            format!(
                                "`{name}` takes at most {} positional argument{} ({list})",
                                order.len(),
                                if order.len() == 1 { "" } else { "s" }
                            )
                        };
                        return Err(CodeErr::new(f.span, msg));
                    };
                    next += 1;
                    (k.to_string(), f.span.clone())
                }
            };
            if !takes(&sig, &key.0) {
                let all: Vec<&str> = sig
                    .required
                    .iter()
                    .chain(sig.optional)
                    .copied()
                    .chain(sig.aliases.iter().map(|(a, _)| *a))
                    .collect();
                let mut e = CodeErr::new(
                    key.1.clone(),
                    format!("`{}` is not an argument of `{name}`", key.0),
                );
                e = match (nearest(&key.0, all.iter().copied()), all.is_empty()) {
                    (_, true) => e.help(format!("`{name}` takes no arguments")),
                    (Some(n), _) => e.help(format!(
                        "did you mean `{n}`? `{name}` takes: {}",
                        all.join(", ")
                    )),
                    (None, _) => e.help(format!("`{name}` takes: {}", all.join(", "))),
                };
                return Err(e);
            }
            if fields.iter().any(|g| g.key == key.0) {
                return Err(CodeErr::new(key.1, format!("`{}` is given twice", key.0)));
            }
            fields.push(Field {
                key: key.0,
                key_span: key.1,
                ..f
            });
        }
        let t = self.peek().clone();
        if takes(&sig, "body") {
            if t.is(';') {
                self.bump();
            } else {
                let b = self.body(&name)?;
                if fields.iter().any(|g| g.key == "body") {
                    return Err(CodeErr::new(
                        b.span,
                        format!("`{name}` has a body already, given as `body = {{ ... }}`"),
                    ));
                }
                span.end = b.span.end;
                fields.push(Field::new(
                    "body",
                    b.span.clone(),
                    Val::Ops(b.clone()),
                    b.span,
                ));
            }
        } else if !t.is(';') {
            let mut e = self.expected(&format!("`;` after `{name}(...)`"), &t);
            if t.is('{') {
                let with: Vec<&str> = signatures()
                    .filter(|s| takes(s, "body"))
                    .map(|s| s.name)
                    .collect();
                e = e.help(format!(
                    "`{name}` takes no block; these ops do: {}",
                    with.join(", ")
                ));
            }
            return Err(e);
        } else {
            self.bump();
        }
        Ok(Node {
            span,
            name,
            name_span: name_tok.span,
            fields,
        })
    }

    /// The arguments of a call, after its `(`: each with its name if it
    /// was given one (and the name's span), as fields keyed by that name.
    #[allow(clippy::type_complexity)]
    fn args(&mut self, op: &str) -> Result<Vec<(Option<(String, Range<usize>)>, Field)>, CodeErr> {
        let mut out = Vec::new();
        loop {
            let t = self.peek().clone();
            if t.is(')') {
                return Ok(out);
            }
            let key = if t.tok == Tok::Ident && self.peek2().is('=') {
                self.bump();
                self.bump();
                Some((self.text(&t).to_string(), t.span.clone()))
            } else {
                None
            };
            let v = self.peek().clone();
            let (val, span) = if v.is('{') {
                let owner = key.as_ref().map_or(op, |k| k.0.as_str()).to_string();
                let b = self.block(&owner)?;
                (Val::Ops(b.clone()), b.span)
            } else {
                let what = match &key {
                    Some((k, _)) => format!("a value for `{k}`"),
                    None => format!("an argument of `{op}`"),
                };
                self.value(&[',', ')'], &what)?
            };
            let ks = key.as_ref().map_or(span.clone(), |k| k.1.clone());
            out.push((key, Field::new("", ks, val, span)));
            let t = self.peek().clone();
            if t.is(',') {
                self.bump();
            } else if !t.is(')') {
                return Err(self.expected(&format!("`,` or `)` in the arguments of `{op}`"), &t));
            }
        }
    }

    /// A value: the tokens up to one of `stops` outside brackets, read as
    /// an integer, a boolean, a string literal, or else the source text.
    pub(super) fn value(
        &mut self,
        stops: &[char],
        what: &str,
    ) -> Result<(Val, Range<usize>), CodeErr> {
        let first = self.pos;
        let mut depth = 0usize;
        loop {
            let t = self.peek().clone();
            match t.tok {
                Tok::Punct(c) if depth == 0 && stops.contains(&c) => break,
                Tok::Punct('(' | '[') => depth += 1,
                Tok::Punct(')' | ']') if depth > 0 => depth -= 1,
                Tok::Punct(';' | '{' | '}') | Tok::Eof => {
                    let want = if depth > 0 {
                        "`)` or `]`".to_string()
                    } else {
                        stops
                            .iter()
                            .map(|c| format!("`{c}`"))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    };
                    return Err(self.expected(&want, &t));
                }
                Tok::Punct(')' | ']') => {
                    return Err(CodeErr::new(
                        t.span.clone(),
                        format!("unmatched `{}`", self.text(&t)),
                    ))
                }
                _ => {}
            }
            if self.pos > first && t.after_comment {
                return Err(
                    CodeErr::new(t.span, "a comment cannot stand inside a value")
                        .help("move the comment after the `,` or the `;`"),
                );
            }
            self.bump();
        }
        if self.pos == first {
            let t = self.peek().clone();
            return Err(self.expected(what, &t));
        }
        let span = self.toks[first].span.start..self.toks[self.pos - 1].span.end;
        let text = &self.src[span.clone()];
        let val = match &self.toks[first].tok {
            Tok::Str(s) if self.pos == first + 1 => Val::Str(s.clone()),
            _ if text == "true" => Val::Bool(true),
            _ if text == "false" => Val::Bool(false),
            _ => match text.parse::<i64>() {
                Ok(n) => Val::Int(n.to_string()),
                Err(_) => Val::Str(text.to_string()),
            },
        };
        Ok((val, span))
    }
}

/// What `s` reads as when written as one argument, if it is exactly one
/// (the printer writes a string bare only if it reads back unchanged).
pub(in crate::codepath) fn read_value(s: &str) -> Option<Val> {
    // As the last argument of a call: the `)` ends it.
    let src = format!("{s})");
    let toks = lex(&src).ok()?;
    if toks.iter().any(|t| t.after_comment)
        || (toks.len() > 2 && toks[0].tok == Tok::Ident && toks[1].is('='))
        || toks[0].is('{')
    {
        return None;
    }
    let mut p = Parser {
        src: &src,
        toks,
        pos: 0,
        functions: &[],
        depth: 0,
        misindented: None,
    };
    let (v, span) = p.value(&[',', ')'], "a value").ok()?;
    (span.end == s.len() && p.peek().is(')') && p.peek2().tok == Tok::Eof).then_some(v)
}
