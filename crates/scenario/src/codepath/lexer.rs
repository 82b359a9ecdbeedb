//! Tokens of a code path. The lexer only finds token boundaries: argument
//! values are kept as source text (see `parser.rs`), so the expression and
//! duration grammars stay where they are and are not duplicated here.

use std::ops::Range;

use super::CodeErr;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    /// `[A-Za-z_][A-Za-z0-9_]*`
    Ident,
    /// A digit and the letters, digits, `_` and `.` after it: `60ns`,
    /// `1.5us`, `4`.
    Number,
    /// A `"..."` literal, unescaped.
    Str(String),
    /// One of `( ) { } [ ] , ; : =`.
    Punct(char),
    /// Any other operator: `==`, `<=`, `&&`, `+`, `!`, ...
    Sym,
    Eof,
}

#[derive(Clone, Debug)]
pub(super) struct Token {
    pub tok: Tok,
    pub span: Range<usize>,
    /// A comment lies between this token and the one before it.
    pub after_comment: bool,
}

impl Token {
    pub fn is(&self, c: char) -> bool {
        self.tok == Tok::Punct(c)
    }
}

/// Two-character operators, lexed as one token so that `a <= b` is not
/// mistaken for a named argument `a = ...` and `==` is not an `=`.
const SYM2: &[&str] = &["==", "!=", "<=", ">=", "&&", "||", "->", "<<", ">>"];

/// Splits `src` into tokens, skipping whitespace and `//` and `/* */`
/// comments. Always ends with an `Eof` token.
pub(super) fn lex(src: &str) -> Result<Vec<Token>, CodeErr> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut after_comment = false;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if src[i..].starts_with("//") {
            i = src[i..].find('\n').map_or(src.len(), |n| i + n);
            after_comment = true;
            continue;
        }
        if src[i..].starts_with("/*") {
            let Some(end) = src[i + 2..].find("*/") else {
                return Err(CodeErr::new(i..i + 2, "unterminated block comment")
                    .help("close it with `*/`; block comments do not nest"));
            };
            i += 2 + end + 2;
            after_comment = true;
            continue;
        }
        let tok = if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            Tok::Ident
        } else if c.is_ascii_digit() {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.')
            {
                i += 1;
            }
            Tok::Number
        } else if c == b'"' {
            let (s, end) = string(src, i)?;
            i = end;
            Tok::Str(s)
        } else if b"(){}[],;:".contains(&c) {
            i += 1;
            Tok::Punct(c as char)
        } else if let Some(s) = SYM2.iter().find(|s| src[i..].starts_with(**s)) {
            i += s.len();
            Tok::Sym
        } else if c == b'=' {
            i += 1;
            Tok::Punct('=')
        } else {
            // One character, which may be several bytes.
            i += src[i..].chars().next().map_or(1, char::len_utf8);
            Tok::Sym
        };
        out.push(Token {
            tok,
            span: start..i,
            after_comment: std::mem::take(&mut after_comment),
        });
    }
    out.push(Token {
        tok: Tok::Eof,
        span: src.len()..src.len(),
        after_comment,
    });
    Ok(out)
}

/// The string literal starting at `start` (a `"`): its value and the
/// offset after its closing quote.
fn string(src: &str, start: usize) -> Result<(String, usize), CodeErr> {
    let mut out = String::new();
    let mut chars = src[start + 1..].char_indices();
    while let Some((k, c)) = chars.next() {
        let at = start + 1 + k;
        match c {
            '"' => return Ok((out, at + 1)),
            '\n' => break,
            '\\' => {
                let Some((_, e)) = chars.next() else { break };
                let bad = |len: usize| {
                    CodeErr::new(at..at + len, "unknown escape in a string")
                        .help(r#"strings take \", \\, \n, \t, \r and \u{HEX}"#)
                };
                out.push(match e {
                    '"' => '"',
                    '\\' => '\\',
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'u' => {
                        let rest = &src[at + 2..];
                        let close = rest.find('}').filter(|_| rest.starts_with('{'));
                        let Some(close) = close else {
                            return Err(bad(2));
                        };
                        let ch = u32::from_str_radix(&rest[1..close], 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| bad(close + 3))?;
                        for _ in 0..close + 1 {
                            chars.next();
                        }
                        ch
                    }
                    other => return Err(bad(1 + other.len_utf8())),
                });
            }
            c => out.push(c),
        }
    }
    Err(CodeErr::new(start..start + 1, "unterminated string")
        .help("close it with `\"` on the same line"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<(Tok, &str)> {
        lex(s)
            .unwrap()
            .into_iter()
            .map(|t| (t.tok, &s[t.span]))
            .collect()
    }

    #[test]
    fn tokens() {
        let k = kinds("work(60ns); // x\n a <= b /* c */ \"q\\\"\\u{41}\"");
        let texts: Vec<&str> = k.iter().map(|(_, t)| *t).collect();
        assert_eq!(
            texts,
            [
                "work",
                "(",
                "60ns",
                ")",
                ";",
                "a",
                "<=",
                "b",
                "\"q\\\"\\u{41}\"",
                ""
            ]
        );
        assert_eq!(k[8].0, Tok::Str("q\"A".into()));
        assert_eq!(k[6].0, Tok::Sym);
    }

    #[test]
    fn errors() {
        assert_eq!(lex("a /* b").unwrap_err().range, 2..4);
        assert_eq!(lex("x \"abc").unwrap_err().range, 2..3);
        assert!(lex("\"\\q\"").is_err());
        assert!(lex("\"\\u{zz}\"").is_err());
        assert!(lex("\"\\u{").is_err());
        assert!(lex("é\"\\").is_err());
    }
}
