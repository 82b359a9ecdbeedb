//! The points of a sweep's results file a plot reads, each with its x
//! value and series.

use super::*;

/// The x value and the series of one point.
pub(super) fn x_and_series(
    point: &serde_json::Value,
    x: &str,
    by: &str,
) -> Result<(f64, String), String> {
    let x_value = match x {
        "cpus" => point["cpus"].as_f64(),
        "seed" => point["seed"].as_f64(),
        key => point["settings"][key].as_str().and_then(|v| v.parse().ok()),
    }
    .ok_or_else(|| format!("error: --x {x}: the points have no numeric `{x}` (sweep with --cpus, or --set {x}=...)"))?;
    let series = match by {
        "variant" => point["variant"].as_str().unwrap_or("base").to_string(),
        key => format!("{key}={}", point["settings"][key].as_str().unwrap_or("?")),
    };
    Ok((x_value, series))
}

/// The points of a sweep's results file that have a result (a point that
/// failed to compile has none).
pub(super) fn points(req: &Request) -> Result<Vec<serde_json::Value>, String> {
    let mut out = Vec::new();
    for (_, p) in crate::results_file::result_lines(&req.results)? {
        if p.get("result").is_some() {
            out.push(p);
        }
    }
    Ok(out)
}

/// ` at cpus = 16` for a plot of the points at `--at`, else nothing.
pub(super) fn at_text(req: &Request) -> String {
    match req.at {
        Some(at) => format!(" at {} = {}", req.x, label(at)),
        None => String::new(),
    }
}

/// Where the results come from, for a caption: the scenario and the
/// smpsim (version and commit) that swept them.
pub(super) fn swept(req: &Request, scenario: &str) -> String {
    let by = points(req).ok().and_then(|ps| {
        ps.iter()
            .find_map(|p| p["smpsim"].as_str().map(String::from))
    });
    format!(
        "sweep of {scenario} by smpsim {}",
        by.as_deref().unwrap_or("(commit not recorded)")
    )
}

/// The points at `--at` (all without it), each with its series, and the
/// scenario's name.
pub(super) fn points_at(
    req: &Request,
) -> Result<(Vec<(serde_json::Value, String)>, String), String> {
    let mut out = Vec::new();
    let mut scenario = String::new();
    for p in points(req)? {
        let (x, series) = x_and_series(&p, &req.x, &req.by)?;
        if req.at.is_none_or(|at| at == x) {
            scenario = p["scenario"].as_str().unwrap_or("").to_string();
            out.push((p, series));
        }
    }
    Ok((out, scenario))
}
