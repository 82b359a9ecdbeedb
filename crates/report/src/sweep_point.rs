//! One point of a sweep, as a line of its results file: written by
//! `smpsim sweep` and read back by `sweep merge`, `report`, `plot` and
//! `sweep --format`, all through this one type.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A sweep point: what it ran (scenario, variant, CPUs, settings, seed),
/// where it sits in its sweep, and its result or the error that stopped
/// it. The fields are in name order because a point's line has always had
/// its keys in that order: a point written by this type has the bytes an
/// earlier smpsim wrote, so results files and their hashes stay the same.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// With `sweep --band`: the point's figures with their bands, or
    /// `{ "error": ... }` when the band's design could not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<serde_json::Value>,
    /// `--cpus N`, when swept.
    pub cpus: Option<u32>,
    /// Why the point has no result (its scenario did not compile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its place in the sweep's fixed order (absent in files of an older
    /// smpsim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// What identifies the point: scenario text, variant, CPUs, settings
    /// and seed.
    pub key: String,
    /// The run's result, as `run --format json` gives one variant; kept
    /// as JSON, which result paths (`counter.NAME.rate`) address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// The scenario's name.
    #[serde(default)]
    pub scenario: String,
    /// The scenario's path as the sweep was given it.
    #[serde(default)]
    pub scenario_file: String,
    /// FNV-1a of the scenario's text ([`crate::results_file::scenario_hash`]).
    pub scenario_hash: String,
    pub seed: u64,
    /// `--set` key and value at this point.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// The smpsim (version and commit) that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smpsim: Option<String>,
    /// How many points the whole sweep has (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_points: Option<u64>,
    /// The variant, `base` for a scenario without variants.
    #[serde(default = "base")]
    pub variant: String,
}

fn base() -> String {
    "base".into()
}

impl SweepPoint {
    /// The point as one line of a results file, with its newline.
    pub fn to_line(&self) -> String {
        let mut s = serde_json::to_string(self).expect("a point serializes");
        s.push('\n');
        s
    }

    /// A line of a results file read back.
    pub fn from_line(line: &str) -> Result<SweepPoint, serde_json::Error> {
        serde_json::from_str(line)
    }

    /// The value of `--set key` at this point.
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings.get(key).map(String::as_str)
    }

    /// The result, `null` when the point has none (result paths then
    /// find nothing).
    pub fn result_json(&self) -> &serde_json::Value {
        static NULL: serde_json::Value = serde_json::Value::Null;
        self.result.as_ref().unwrap_or(&NULL)
    }

    /// The result's part `key` (`counters`, `cpus`, ...), `null` when the
    /// point has no result or the result no such part.
    pub fn result_part(&self, key: &str) -> &serde_json::Value {
        &self.result_json()[key]
    }

    /// `[lo, hi]` of the band `sweep --band` gave the figure at result
    /// path `path` (`counter.ops.rate`) of this point's variant; `None`
    /// without a band for it (no `--band`, or its design failed).
    pub fn band_of(&self, path: &str) -> Option<(f64, f64)> {
        let figure = format!("{}.{path}", self.variant);
        let entry = self
            .band
            .as_ref()?
            .as_array()?
            .iter()
            .find(|b| b["figure"].as_str() == Some(figure.as_str()))?;
        let (lo, hi) = (entry["band"]["lo"].as_f64()?, entry["band"]["hi"].as_f64()?);
        (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point() -> SweepPoint {
        SweepPoint {
            band: None,
            cpus: Some(4),
            error: None,
            index: Some(3),
            key: "h|base|4|k=1|7".into(),
            result: Some(serde_json::json!({"counters": [{"name": "ops", "rate": 1.5}]})),
            scenario: "s".into(),
            scenario_file: "s.toml".into(),
            scenario_hash: "h".into(),
            seed: 7,
            settings: [("k".to_string(), "1".to_string())].into(),
            smpsim: Some("0.1.0".into()),
            sweep_points: Some(8),
            variant: "base".into(),
        }
    }

    #[test]
    fn a_point_reads_back_as_written() {
        let p = point();
        assert_eq!(SweepPoint::from_line(&p.to_line()).unwrap(), p);
    }

    #[test]
    fn a_line_has_its_keys_in_name_order() {
        // The order an object's keys have always had in a results file.
        let line = point().to_line();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(serde_json::to_string(&v).unwrap() + "\n", line);
    }

    #[test]
    fn an_older_line_without_place_or_size_reads() {
        let p = SweepPoint::from_line(
            r#"{"cpus":null,"key":"k","scenario_hash":"h","seed":1,"error":"bad"}"#,
        )
        .unwrap();
        assert_eq!(
            (p.index, p.sweep_points, p.variant.as_str()),
            (None, None, "base")
        );
        assert!(p.result_part("counters").is_null());
    }

    #[test]
    fn a_band_is_found_by_its_variant_and_path() {
        let mut p = point();
        assert_eq!(p.band_of("counter.ops.rate"), None);
        p.band = Some(serde_json::json!([
            {"figure": "other.counter.ops.rate", "value": 1.0, "band": {"lo": 9.0, "hi": 9.5}},
            {"figure": "base.counter.ops.rate", "value": 1.5, "band": {"lo": 1.0, "hi": 2.0}}
        ]));
        assert_eq!(p.band_of("counter.ops.rate"), Some((1.0, 2.0)));
        assert_eq!(p.band_of("counter.other.rate"), None);
        p.band = Some(serde_json::json!({"error": "no design"}));
        assert_eq!(p.band_of("counter.ops.rate"), None);
    }

    #[test]
    fn a_line_without_a_key_is_not_a_point() {
        let e = SweepPoint::from_line(r#"{"scenario_hash":"h","seed":1}"#).unwrap_err();
        assert!(e.to_string().contains("key"), "{e}");
    }
}
