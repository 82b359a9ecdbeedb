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
            r.published_text(num),
            num(r.simulated),
            r.ratio.map_or("-".into(), |x| format!("{x:.2}")),
            cell(&r.rule),
            r.seeds,
            match r.pass {
                Some(false) => "**NO**",
                _ => r.verdict_word(),
            }
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
        let row = MetricRow::judged(
            "c".into(),
            "a|b".into(),
            Some(2.0),
            &smpsim_scenario::PassRule::Factor(1.2),
            3.0,
            1,
            (3.0, 3.0),
            String::new(),
            false,
        );
        let md = reproduce(&[row]);
        assert_eq!(
            md.lines().nth(2),
            Some("| c | a\\|b | 2.000 | 3.000 | 1.50 | within 1.2x | 1 | **NO** |")
        );
    }
}
