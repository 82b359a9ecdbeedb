//! `[reproduce]`: how a scenario reproduces a published result. Parsed and
//! checked here, interpreted by the CLI.

use serde::Deserialize;
use toml::de::ValueDeserializer;

use crate::document::Value;
use crate::error::{DResult, Diag};
use crate::raw::{RawPass, RawReproduce};

#[derive(Clone, Debug, PartialEq)]
pub struct Reproduce {
    /// The case this scenario reproduces (default: the scenario's name).
    pub case: String,
    /// How many seeds to run per variant.
    pub seeds: u32,
    /// `--set` overrides applied under `--quick`: key, and the value as
    /// TOML text (as written in the file).
    pub quick: Vec<(String, String)>,
    pub metrics: Vec<MetricDef>,
}

/// A metric compared against a published figure.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricDef {
    pub name: String,
    /// The published figure; none where the source gives none (then the
    /// pass rule can only be bounds, `min`/`max`).
    pub published: Option<f64>,
    /// An expression over run results, kept as written.
    pub expr: String,
    pub pass: PassRule,
    /// Where the published figure comes from.
    pub source: String,
}

/// When a measured value reproduces the published one.
#[derive(Clone, Debug, PartialEq)]
pub enum PassRule {
    /// Within a factor: `published / f <= measured <= published * f`.
    Factor(f64),
    /// Within this percentage of the published value.
    WithinPct(f64),
    /// Within this absolute distance of the published value.
    Abs(f64),
    /// Inside the bounds given.
    Range { min: Option<f64>, max: Option<f64> },
}

fn pass_rule(p: &RawPass, span: std::ops::Range<usize>) -> DResult<PassRule> {
    let given = [&p.factor, &p.within_pct, &p.abs]
        .iter()
        .filter(|v| v.is_some())
        .count()
        + usize::from(p.min.is_some() || p.max.is_some());
    if given != 1 {
        return Err(Diag::new(
            span,
            "`pass` needs exactly one rule: `factor`, `within_pct`, `abs`, or `min` and/or `max`",
        ));
    }
    let finite = |v: &toml::Spanned<f64>, ok: bool, what: &str| -> DResult<f64> {
        if v.get_ref().is_finite() && ok {
            Ok(*v.get_ref())
        } else {
            Err(Diag::new(v.span(), what.to_string()))
        }
    };
    if let Some(f) = &p.factor {
        return finite(f, *f.get_ref() >= 1.0, "`factor` must be at least 1").map(PassRule::Factor);
    }
    if let Some(w) = &p.within_pct {
        return finite(w, *w.get_ref() > 0.0, "`within_pct` must be greater than 0")
            .map(PassRule::WithinPct);
    }
    if let Some(a) = &p.abs {
        return finite(a, *a.get_ref() >= 0.0, "`abs` cannot be negative").map(PassRule::Abs);
    }
    let min = p
        .min
        .as_ref()
        .map(|v| finite(v, true, "expected a finite number"))
        .transpose()?;
    let max = p
        .max
        .as_ref()
        .map(|v| finite(v, true, "expected a finite number"))
        .transpose()?;
    if let (Some(lo), Some(hi), Some(m)) = (min, max, &p.max) {
        if lo > hi {
            return Err(Diag::new(m.span(), "`max` is below `min`"));
        }
    }
    Ok(PassRule::Range { min, max })
}

/// Parses the `[reproduce]` value of the base document; `text` is the file.
pub(crate) fn parse(v: Value<'_>, text: &str, default_case: &str) -> DResult<Reproduce> {
    let span = v.span();
    let raw = RawReproduce::deserialize(ValueDeserializer::from(v))
        .map_err(|e| Diag::from_toml(&e, 0, span.clone()))?;
    let seeds = match &raw.seeds {
        None => 1,
        Some(s) => match u32::try_from(*s.get_ref()) {
            Ok(n) if n >= 1 => n,
            _ => return Err(Diag::new(s.span(), "`seeds` must be at least 1")),
        },
    };
    let quick = raw
        .quick
        .iter()
        .flat_map(|q| q.0.iter())
        .map(|(k, v)| {
            (
                k.get_ref().clone(),
                text.get(v.span()).unwrap_or_default().trim().to_string(),
            )
        })
        .collect();
    let mut metrics = Vec::new();
    for m in raw.metric.iter().flatten() {
        let m = m.get_ref();
        if metrics
            .iter()
            .any(|x: &MetricDef| &x.name == m.name.get_ref())
        {
            return Err(Diag::new(
                m.name.span(),
                format!("metric `{}` is defined twice", m.name.get_ref()),
            ));
        }
        let pass = pass_rule(m.pass.get_ref(), m.pass.span())?;
        let published = match &m.published {
            Some(p) if p.get_ref().is_finite() => Some(*p.get_ref()),
            Some(p) => return Err(Diag::new(p.span(), "`published` must be a finite number")),
            None if matches!(pass, PassRule::Range { .. }) => None,
            None => {
                return Err(Diag::new(
                    m.pass.span(),
                    format!(
                        "metric `{}` has no `published` figure, so its `pass` can only be bounds (`min` and/or `max`)",
                        m.name.get_ref()
                    ),
                )
                .help("give the published figure as `published = NUMBER`, or leave it out and bound the value"))
            }
        };
        metrics.push(MetricDef {
            name: m.name.get_ref().clone(),
            published,
            expr: m.expr.get_ref().clone(),
            pass,
            source: m.source.get_ref().clone(),
        });
    }
    Ok(Reproduce {
        case: raw
            .case
            .map_or_else(|| default_case.to_string(), |c| c.into_inner()),
        seeds,
        quick,
        metrics,
    })
}
