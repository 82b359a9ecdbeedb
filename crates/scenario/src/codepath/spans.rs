//! Where each byte of a TOML string's value was written: code is parsed
//! from the string's value, and its errors and spans must point at the
//! file.

use std::ops::Range;

/// Maps byte offsets of a string value to offsets of the (virtual) text
/// it was written in.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SpanMap {
    /// The value is written verbatim from this offset (literal strings,
    /// basic strings without escapes).
    Linear(usize),
    /// Offset `i` of the value was written at `offsets[i]` (strings with
    /// escapes); one entry past the end.
    Table(Vec<usize>),
    /// The value cannot be located more precisely than the whole string.
    Whole(Range<usize>),
}

impl SpanMap {
    /// `raw` is the string as written (with its quotes) at `span`, if it
    /// is known; `value` is what TOML made of it.
    pub(crate) fn new(raw: Option<&str>, value: &str, span: Range<usize>) -> SpanMap {
        let Some(raw) = raw else {
            return SpanMap::Whole(span);
        };
        if raw == value {
            // A `--set` value that is not TOML is taken as the string.
            return SpanMap::Linear(span.start);
        }
        let (delim, multi) = if raw.starts_with("'''") || raw.starts_with("\"\"\"") {
            (3, true)
        } else {
            (1, false)
        };
        if raw.len() < 2 * delim {
            return SpanMap::Whole(span);
        }
        let mut start = delim;
        if multi {
            // TOML drops a newline right after the opening delimiter.
            if raw[start..].starts_with("\r\n") {
                start += 2;
            } else if raw[start..].starts_with('\n') {
                start += 1;
            }
        }
        let Some(body) = raw.get(start..raw.len() - delim) else {
            return SpanMap::Whole(span);
        };
        if raw.starts_with('\'') {
            return if body == value {
                SpanMap::Linear(span.start + start)
            } else {
                SpanMap::Whole(span)
            };
        }
        match unescape(body, multi) {
            Some((text, offsets)) if text == value => SpanMap::Table(
                offsets
                    .into_iter()
                    .map(|o| span.start + start + o)
                    .collect(),
            ),
            _ => SpanMap::Whole(span),
        }
    }

    pub(crate) fn at(&self, i: usize) -> usize {
        match self {
            SpanMap::Linear(base) => base + i,
            SpanMap::Table(t) => t.get(i).or(t.last()).copied().unwrap_or(0),
            SpanMap::Whole(r) => r.start,
        }
    }

    pub(crate) fn range(&self, r: &Range<usize>) -> Range<usize> {
        match self {
            SpanMap::Whole(w) => w.clone(),
            _ => self.at(r.start)..self.at(r.end).max(self.at(r.start)),
        }
    }
}

/// A TOML basic string's body unescaped, with the offset in `body` each
/// byte of the result comes from (and one past the end). `None` if it is
/// not a well-formed body.
fn unescape(body: &str, multi: bool) -> Option<(String, Vec<usize>)> {
    let mut out = String::new();
    let mut offsets = Vec::new();
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            offsets.extend((0..c.len_utf8()).map(|k| i + k));
            continue;
        }
        let (_, e) = chars.next()?;
        let hex = |chars: &mut std::iter::Peekable<std::str::CharIndices>, n: usize| {
            let mut v = 0u32;
            for _ in 0..n {
                v = v * 16 + chars.next()?.1.to_digit(16)?;
            }
            char::from_u32(v)
        };
        let d = match e {
            'b' => '\u{8}',
            't' => '\t',
            'n' => '\n',
            'f' => '\u{c}',
            'r' => '\r',
            'e' => '\u{1b}',
            '"' => '"',
            '\\' => '\\',
            'x' => hex(&mut chars, 2)?,
            'u' => hex(&mut chars, 4)?,
            'U' => hex(&mut chars, 8)?,
            c if multi && c.is_whitespace() => {
                // A line-ending backslash: the whitespace and newlines
                // after it are dropped.
                while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
                    chars.next();
                }
                continue;
            }
            _ => return None,
        };
        out.push(d);
        offsets.extend(std::iter::repeat_n(i, d.len_utf8()));
    }
    offsets.push(body.len());
    Some((out, offsets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_strings_map_linearly() {
        let raw = "'''\nab\ncd'''";
        let m = SpanMap::new(Some(raw), "ab\ncd", 10..10 + raw.len());
        assert_eq!(m, SpanMap::Linear(14));
        let m = SpanMap::new(Some("'x y'"), "x y", 5..10);
        assert_eq!(m.range(&(2..3)), 8..9);
    }

    #[test]
    fn escapes_map_to_where_they_are_written() {
        let raw = r#""a\tb\u00e9c""#;
        let m = SpanMap::new(Some(raw), "a\tbéc", 0..raw.len());
        // a=1, \t=2..4, b=4, \u00e9=5..11, c=11
        assert_eq!(m.at(0), 1);
        assert_eq!(m.at(1), 2);
        assert_eq!(m.at(2), 4);
        assert_eq!(m.at(3), 5);
        assert_eq!(m.at(5), 11);
        assert_eq!(m.at(6), 12);
        let raw = "\"\"\"\nx\\\n   y\"\"\"";
        let m = SpanMap::new(Some(raw), "xy", 0..raw.len());
        assert_eq!((m.at(0), m.at(1)), (4, 10));
    }

    #[test]
    fn mismatches_fall_back_to_the_whole_string() {
        let m = SpanMap::new(Some("'abc'"), "abd", 3..8);
        assert_eq!(m.range(&(1..2)), 3..8);
        assert_eq!(SpanMap::new(None, "x", 0..1), SpanMap::Whole(0..1));
    }
}
