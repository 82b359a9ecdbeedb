//! Metric expressions of reproductions, evaluated against runs as JSON.
//!
//! An expression is arithmetic (`+ - * /`, parentheses, numbers) over
//! paths `VARIANT.PATH` into a variant's result, `PATH` in the syntax of
//! [`crate::path`] (the one `plot --y` takes). Functions over per-CPU
//! arrays: `max_cpu(VARIANT.field)` and `sum_cpu(VARIANT.field)`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::path::resolve_segs;

/// Runs by variant name, as JSON values.
pub type Runs = BTreeMap<String, Value>;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    runs: &'a Runs,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn expr(&mut self) -> Result<f64, String> {
        let mut v = self.term()?;
        loop {
            self.ws();
            match self.s.get(self.i) {
                Some(b'+') => {
                    self.i += 1;
                    v += self.term()?;
                }
                Some(b'-') => {
                    self.i += 1;
                    v -= self.term()?;
                }
                _ => return Ok(v),
            }
        }
    }
    fn term(&mut self) -> Result<f64, String> {
        let mut v = self.atom()?;
        loop {
            self.ws();
            match self.s.get(self.i) {
                Some(b'*') => {
                    self.i += 1;
                    v *= self.atom()?;
                }
                Some(b'/') => {
                    self.i += 1;
                    v /= self.atom()?;
                }
                _ => return Ok(v),
            }
        }
    }
    fn atom(&mut self) -> Result<f64, String> {
        self.ws();
        let start = self.i;
        match self.s.get(self.i) {
            Some(b'(') => {
                self.i += 1;
                let v = self.expr()?;
                self.ws();
                if self.s.get(self.i) != Some(&b')') {
                    return Err(format!("expected `)` at column {}", self.i + 1));
                }
                self.i += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() => {
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_digit()
                        || self.s[self.i] == b'.'
                        || self.s[self.i] == b'e')
                {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                t.parse().map_err(|_| format!("bad number `{t}`"))
            }
            Some(_) => {
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || b"._-".contains(&self.s[self.i]))
                {
                    self.i += 1;
                }
                let word = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                if word.is_empty() {
                    return Err(format!("unexpected character at column {}", self.i + 1));
                }
                self.ws();
                if self.s.get(self.i) == Some(&b'(') {
                    self.i += 1;
                    self.ws();
                    let argstart = self.i;
                    while self.i < self.s.len() && self.s[self.i] != b')' {
                        self.i += 1;
                    }
                    let arg = std::str::from_utf8(&self.s[argstart..self.i])
                        .unwrap()
                        .trim()
                        .to_string();
                    self.i += 1;
                    return self.function(word, &arg);
                }
                self.path(word)
            }
            None => Err("unexpected end of expression".into()),
        }
    }
    fn path(&self, word: &str) -> Result<f64, String> {
        let (variant, rest) = word
            .split_once('.')
            .ok_or_else(|| format!("`{word}` is not VARIANT.path"))?;
        let run = self
            .runs
            .get(variant)
            .ok_or_else(|| format!("no variant `{variant}` in this reproduction"))?;
        let segs: Vec<&str> = rest.split('.').collect();
        resolve_segs(run, &segs)?
            .as_f64()
            .ok_or_else(|| format!("`{word}` is not a number"))
    }
    fn function(&self, name: &str, arg: &str) -> Result<f64, String> {
        let (variant, field) = arg
            .split_once('.')
            .ok_or_else(|| format!("`{arg}` is not VARIANT.field"))?;
        let run = self
            .runs
            .get(variant)
            .ok_or_else(|| format!("no variant `{variant}`"))?;
        let cpus = run
            .get("cpus")
            .and_then(|c| c.as_array())
            .ok_or("no cpus")?;
        // A path a CPU does not have is an error: read as 0 it would make
        // a mistyped path a silently wrong figure.
        let segs: Vec<&str> = field.split('.').collect();
        let vals = cpus
            .iter()
            .enumerate()
            .map(|(i, c)| {
                resolve_segs(c, &segs)
                    .map_err(|e| format!("{name}({arg}): CPU {i}: {e}"))?
                    .as_f64()
                    .ok_or_else(|| format!("{name}({arg}): CPU {i}: `{field}` is not a number"))
            })
            .collect::<Result<Vec<f64>, String>>()?;
        match name {
            "max_cpu" => Ok(vals.into_iter().fold(0.0, f64::max)),
            "sum_cpu" => Ok(vals.into_iter().sum()),
            _ => Err(format!(
                "unknown function `{name}`; expected max_cpu or sum_cpu"
            )),
        }
    }
}

/// Evaluates `expr` against `runs`.
pub fn eval(expr: &str, runs: &Runs) -> Result<f64, String> {
    let mut p = Parser {
        s: expr.as_bytes(),
        i: 0,
        runs,
    };
    let v = p.expr()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!(
            "unexpected `{}` at column {}",
            &expr[p.i..],
            p.i + 1
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_ratios_and_functions() {
        let mut runs = Runs::new();
        runs.insert(
            "a".into(),
            serde_json::json!({
                "counters": [{"name": "ok", "rate": 10.0}],
                "cpus": [{"max_preempt_off_ns": 5}, {"max_preempt_off_ns": 9}],
            }),
        );
        runs.insert(
            "b".into(),
            serde_json::json!({"counters": [{"name": "ok", "rate": 2000.0}]}),
        );
        assert_eq!(
            eval("b.counter.ok.rate / a.counter.ok.rate", &runs).unwrap(),
            200.0
        );
        assert_eq!(
            eval("(1 + 2) * 3 - max_cpu(a.max_preempt_off_ns)", &runs).unwrap(),
            0.0
        );
        assert!(eval("c.counter.ok.rate", &runs)
            .unwrap_err()
            .contains("no variant"));
        assert!(eval("a.counter.nope.rate", &runs)
            .unwrap_err()
            .contains("nope"));
    }

    /// Issue 25: a mistyped per-CPU path is an error naming it, not 0.
    #[test]
    fn unknown_per_cpu_paths_are_errors() {
        let mut runs = Runs::new();
        runs.insert(
            "a".into(),
            serde_json::json!({"cpus": [{"spin_ns": 5}, {"spin_ns": 9}]}),
        );
        assert_eq!(eval("sum_cpu(a.spin_ns)", &runs).unwrap(), 14.0);
        let e = eval("sum_cpu(a.spinn_ns)", &runs).unwrap_err();
        assert_eq!(e, "sum_cpu(a.spinn_ns): CPU 0: no field `spinn_ns`");
        let e = eval("1 / max_cpu(a.spin)", &runs).unwrap_err();
        assert!(e.contains("max_cpu(a.spin): CPU 0: no field `spin`"), "{e}");
    }
}
