//! `--format markdown`: a reproduction as a Markdown table, for an issue
//! or a pull request.

use std::fmt::Write;

use crate::model::MetricRow;
use crate::text::num;

/// One row per metric: published, simulated, their ratio, the rule, pass.
pub fn reproduce(rows: &[MetricRow]) -> String {
    let mut s = String::new();
    if rows.first().is_some_and(|r| r.quick) {
        let _ = writeln!(s, "**{}**\n", crate::text::QUICK_NOTE);
    }
    s.push_str(
        "| case | metric | published | simulated | sim/pub | rule | seeds | pass |\n|---|---|---:|---:|---:|---|---:|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&r.case),
            cell(&r.metric),
            r.published.map_or("-".into(), num),
            num(r.simulated),
            r.ratio.map_or("-".into(), |x| format!("{x:.2}")),
            cell(&r.rule),
            r.seeds,
            if r.pass { "yes" } else { "**NO**" }
        );
    }
    s
}

/// A cell's text, its pipes escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_per_metric_with_pipes_escaped() {
        let row = MetricRow {
            case: "c".into(),
            metric: "a|b".into(),
            published: Some(2.0),
            simulated: 3.0,
            ratio: Some(1.5),
            pass: false,
            rule: "within 2x".into(),
            seeds: 1,
            min: 3.0,
            max: 3.0,
            source: String::new(),
            quick: false,
            band: None,
        };
        let md = reproduce(&[row]);
        assert_eq!(
            md.lines().nth(2),
            Some("| c | a\\|b | 2.000 | 3.000 | 1.50 | within 2x | 1 | **NO** |")
        );
    }
}
