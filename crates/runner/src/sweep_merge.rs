//! `sweep merge`: the shards' lines in the sweep's point order, as the
//! whole sweep writes them. Each line is kept byte for byte (never parsed
//! and written again). Refused: lines of different scenarios (or scenario
//! texts), a point in two files, two points at one place in the order (not
//! shards of one sweep), a file that is not a sweep's, shards that name
//! the scenario by different paths, and (unless `partial`) a set of
//! shards that leaves points of the sweep out.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use smpsim_report::sweep_point::SweepPoint;

use crate::output::{check_outputs, emit};

/// One line of a results file given to `sweep merge`.
struct MergeLine<'a> {
    index: u64,
    key: String,
    file: &'a Path,
    line: &'a str,
}

/// What the lines read so far agree on: the scenario (text hash, name,
/// first file), the path naming it, and the sweep's size.
#[derive(Default)]
struct Agreed<'a> {
    scenario: Option<(String, String, &'a Path)>,
    scenario_file: Option<(String, String)>,
    whole: Option<(u64, String)>,
}

impl<'a> Agreed<'a> {
    /// Refuses `point` (at `at`, in `file`) if it is not of the same sweep
    /// as the points before it.
    fn check(&mut self, point: &SweepPoint, file: &'a Path, at: &str) -> Result<(), String> {
        let (hash, name) = (&point.scenario_hash, &point.scenario);
        match &self.scenario {
            None => self.scenario = Some((hash.clone(), name.clone(), file)),
            Some((h, first_name, first)) if h != hash => {
                return Err(format!(
                    "error: mixed scenarios: {} holds `{first_name}` (scenario text {h}), {at} holds `{name}` (scenario text {hash}); merge the shards of one sweep",
                    first.display(),
                ))
            }
            Some(_) => {}
        }
        let named = &point.scenario_file;
        match &self.scenario_file {
            None => self.scenario_file = Some((named.clone(), at.to_string())),
            Some((first, where_)) if first != named => {
                return Err(format!(
                    "error: {where_} names the scenario `{first}`, {at} names it `{named}`: shards of one sweep run the same command (give the scenario by the same path), so `report` finds it",
                ))
            }
            Some(_) => {}
        }
        if let Some(n) = point.sweep_points {
            match &self.whole {
                None => self.whole = Some((n, at.to_string())),
                Some((m, where_)) if *m != n => {
                    return Err(format!(
                        "error: {where_} is a point of a sweep of {m} points, {at} of one of {n}: not shards of one sweep (the same command with --shard K/N)",
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// Merges the shards `files` into `output` and says what it merged.
pub fn merge(files: &[PathBuf], output: &Path, partial: bool) -> Result<String, String> {
    let inputs: Vec<(&str, &Path)> = files.iter().map(|f| ("input", f.as_path())).collect();
    check_outputs(&inputs, &[("-o", output)])?;
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).map_err(|e| format!("error: {}: {e}", f.display())))
        .collect::<Result<_, _>>()?;
    let mut agreed = Agreed::default();
    let mut lines = Vec::new();
    for (file, text) in files.iter().zip(&texts) {
        lines.extend(read_lines(file, text, &mut agreed)?);
    }
    lines.sort_by(|a, b| a.index.cmp(&b.index).then_with(|| a.key.cmp(&b.key)));
    check_places(&lines)?;
    let (missing, which) = missing_points(&lines, agreed.whole.as_ref().map(|(n, _)| *n))?;
    if missing > 0 && !partial {
        return Err(format!(
            "error: {which}; give every shard's file, finish the missing shards (the same command with --shard K/N), or pass --partial to merge what there is"
        ));
    }
    let mut out = String::with_capacity(texts.iter().map(|t| t.len()).sum());
    for l in &lines {
        out.push_str(l.line);
        out.push('\n');
    }
    emit(&out, Some(output)).map_err(|e| format!("error: {e}"))?;
    Ok(format!(
        "sweep merge: {} points from {} files into {}{}",
        lines.len(),
        files.len(),
        output.display(),
        if missing > 0 {
            format!(" (--partial: {which})")
        } else {
            String::new()
        }
    ))
}

/// The points of one shard's file, each checked against those before it.
fn read_lines<'a>(
    file: &'a Path,
    text: &'a str,
    agreed: &mut Agreed<'a>,
) -> Result<Vec<MergeLine<'a>>, String> {
    if !text.is_empty() && !text.ends_with('\n') {
        return Err(format!(
            "error: {}: the last line is torn (the shard did not finish); run its sweep again to complete it",
            file.display()
        ));
    }
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{}:{}", file.display(), n + 1);
        let point = match SweepPoint::from_line(line) {
            Ok(p) => Some(p),
            Err(e) if e.classify() == serde_json::error::Category::Data => None,
            Err(e) => return Err(format!("error: {at}: not a sweep result ({e})")),
        };
        let Some((point, index)) = point.and_then(|p| p.index.map(|i| (p, i))) else {
            return Err(format!(
                "error: {at}: not a point of a sweep this smpsim can merge (no key, scenario_hash or index); run the sweep again",
            ));
        };
        agreed.check(&point, file, &at)?;
        lines.push(MergeLine {
            index,
            key: point.key,
            file,
            line,
        });
    }
    Ok(lines)
}

/// Refuses a point given twice, or two points at one place (sorted lines).
fn check_places(lines: &[MergeLine]) -> Result<(), String> {
    for w in lines.windows(2) {
        if w[0].key == w[1].key {
            return Err(format!(
                "error: overlapping points: {} and {} both hold point {} ({}); give each shard once",
                w[0].file.display(),
                w[1].file.display(),
                w[0].index,
                w[0].key
            ));
        }
        if w[0].index == w[1].index {
            return Err(format!(
                "error: {} and {} hold different points at place {} ({} and {}): not shards of one sweep (the same command with --shard K/N)",
                w[0].file.display(),
                w[1].file.display(),
                w[0].index,
                w[0].key,
                w[1].key
            ));
        }
    }
    Ok(())
}

/// How many points of the sweep are missing, and which, said. A point at
/// each place 0..n when all shards are in. The lines say n (`known_total`);
/// a file of an older smpsim does not, and then only the places up to the
/// last point given can be checked.
fn missing_points(lines: &[MergeLine], known_total: Option<u64>) -> Result<(u64, String), String> {
    let total = known_total.unwrap_or_else(|| lines.last().map_or(0, |l| l.index + 1));
    let present: HashSet<u64> = lines.iter().map(|l| l.index).collect();
    let absent: Vec<u64> = (0..total).filter(|i| !present.contains(i)).collect();
    if let Some(l) = lines.iter().find(|l| l.index >= total) {
        return Err(format!(
            "error: {}: point {} of a sweep of {total} points: not a point of this sweep",
            l.file.display(),
            l.index
        ));
    }
    let missing = absent.len() as u64;
    let shown: Vec<String> = absent.iter().take(10).map(|i| i.to_string()).collect();
    let which = format!(
        "{missing} of the sweep's {total} points are missing (places {}{}{}): a shard not given or not finished",
        shown.join(", "),
        if absent.len() > shown.len() { ", ..." } else { "" },
        if known_total.is_none() {
            "; points after the last given cannot be counted in files of an older smpsim"
        } else {
            ""
        }
    );
    Ok((missing, which))
}
