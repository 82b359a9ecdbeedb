//! The `assumed:` values of a scenario, for the HTML report's list: each
//! comment that says `assumed`, whole, with the setting it speaks of.
//!
//! A comment is a TOML `#` comment or a code path's `//` comment. It is
//! whole when it runs on: a comment on a line of its own continues over
//! the comment-only lines around it that start in the same column (a
//! paragraph); a comment after a setting continues over the comment-only
//! lines below it aligned with it. The setting is the code on the
//! comment's line, or, for a paragraph, the line right after it.

/// Where the comment of one line starts, if it has one, outside strings.
fn comment_start(line: &str) -> Option<(usize, &'static str)> {
    let b = line.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < b.len() {
        match (quote, b[i]) {
            (Some(b'"'), b'\\') => i += 1,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, q @ (b'"' | b'\'')) => quote = Some(q),
            (None, b'#') => return Some((i, "#")),
            (None, b'/') if b.get(i + 1) == Some(&b'/') => return Some((i, "//")),
            _ => {}
        }
        i += 1;
    }
    None
}

/// One line: its code (trimmed) and its comment (column, marker, text).
struct Line<'a> {
    code: &'a str,
    comment: Option<(usize, &'static str, &'a str)>,
}

impl<'a> Line<'a> {
    fn of(line: &'a str) -> Self {
        match comment_start(line) {
            Some((at, marker)) => Line {
                code: line[..at].trim(),
                comment: Some((at, marker, line[at + marker.len()..].trim())),
            },
            None => Line {
                code: line.trim(),
                comment: None,
            },
        }
    }
    /// A comment alone on its line, starting at `column` with `marker`.
    fn continues(&self, column: usize, marker: &str) -> bool {
        self.code.is_empty()
            && matches!(self.comment, Some((c, m, _)) if c == column && m == marker)
    }
}

/// Every comment of `text` that says `assumed`, whole: (its first line,
/// the setting it speaks of or "", the comment's text on one line).
pub fn assumed(text: &str) -> Vec<(usize, String, String)> {
    let lines: Vec<Line> = text.lines().map(Line::of).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((column, marker, _)) = lines[i].comment else {
            i += 1;
            continue;
        };
        let own_line = lines[i].code.is_empty();
        let mut first = i;
        if own_line {
            while first > 0 && lines[first - 1].continues(column, marker) {
                first -= 1;
            }
        }
        let mut last = i;
        while last + 1 < lines.len() && lines[last + 1].continues(column, marker) {
            last += 1;
        }
        let whole: Vec<&str> = lines[first..=last]
            .iter()
            .filter_map(|l| l.comment.map(|c| c.2))
            .collect();
        if whole.iter().any(|c| c.contains("assumed")) {
            let setting = if own_line {
                lines.get(last + 1).map_or("", |l| l.code)
            } else {
                lines[i].code
            };
            out.push((
                first + 1,
                setting.trim_end_matches(',').trim().to_string(),
                whole.join(" "),
            ));
        }
        i = last + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assumed_lines_split_into_setting_and_why() {
        let text = "hz = 1000  # assumed: CONFIG_HZ=1000\n# plain\n  { op = \"work\", time = \"1us\" },   # assumed: copy_to_user\n# assumed: all of it\n";
        let a = assumed(text);
        assert_eq!(a.len(), 3);
        assert_eq!(
            a[0],
            (1, "hz = 1000".into(), "assumed: CONFIG_HZ=1000".into())
        );
        assert_eq!(a[1].1, "{ op = \"work\", time = \"1us\" }");
        assert_eq!(a[2], (4, String::new(), "assumed: all of it".into()));
    }

    #[test]
    fn comments_are_whole_over_their_lines() {
        let text = "\
# takedown_cpu(): stop_machine. assumed: 20 us: pseries_cpu_disable()
# (set_cpu_online(), the XIVE teardown), tick_offline_cpu().
takedown_cpu = '''
    work(200us);        // assumed: offline callbacks, smpboot_park_threads
                        // and the rest of them
    // BP: CPUHP_TEARDOWN_CPU
    mark(t);
    syscall(write) {    // assumed: write(2) to \"/dev/null\" # not TOML
'''
x = \"a # b\"  # assumed: a hash in a string is no comment
";
        let a = assumed(text);
        assert_eq!(a.len(), 4, "{a:?}");
        assert_eq!(
            a[0],
            (
                1,
                "takedown_cpu = '''".into(),
                "takedown_cpu(): stop_machine. assumed: 20 us: pseries_cpu_disable() (set_cpu_online(), the XIVE teardown), tick_offline_cpu().".into()
            )
        );
        assert_eq!(
            a[1],
            (
                4,
                "work(200us);".into(),
                "assumed: offline callbacks, smpboot_park_threads and the rest of them".into()
            )
        );
        assert_eq!(a[2].1, "syscall(write) {");
        assert_eq!(a[2].2, "assumed: write(2) to \"/dev/null\" # not TOML");
        assert_eq!(a[3].1, "x = \"a # b\"");
    }
}
