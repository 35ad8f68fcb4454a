//! The devices of a PMIx job as Prometheus' file_sd targets: one group per device that serves
//! metrics, labelled with its id and rank. Scrape it with `honor_labels: true`, so that the
//! `device` label the endpoint exports and the target's agree (they carry the same id).

use serde_json::json;

/// The file_sd JSON (one line) for `devices`: (rank, id, metrics endpoint; empty: none).
pub(super) fn file_sd<'a>(devices: impl IntoIterator<Item = (u32, &'a str, &'a str)>) -> String {
    let groups: Vec<serde_json::Value> = devices
        .into_iter()
        .filter(|(_, _, endpoint)| !endpoint.is_empty())
        .map(|(rank, id, endpoint)| json!({"targets": [endpoint], "labels": {"device": id, "rank": rank.to_string()}}))
        .collect();
    serde_json::Value::Array(groups).to_string()
}

/// Writes `json` to `path` whole: into a file beside it, then renamed over it (Prometheus
/// watches the file and must never read half of it).
pub(super) fn write(path: &std::path::Path, json: &str) -> std::io::Result<()> {
    use std::io::Write;
    // A name of this process's own: two commands writing at once never mix their files.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(json.as_bytes())?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_group_per_device_with_an_endpoint() {
        let json = file_sd([(0, "sampler", "10.0.0.5:40123"), (1, "sink", ""), (2, "proc_1", "10.0.0.6:9100")]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            v,
            json!([
                {"targets": ["10.0.0.5:40123"], "labels": {"device": "sampler", "rank": "0"}},
                {"targets": ["10.0.0.6:9100"], "labels": {"device": "proc_1", "rank": "2"}}
            ])
        );
        assert!(!json.contains('\n'));
        assert_eq!(file_sd([]), "[]");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("targets.json");
        write(&path, &json).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), json);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "the temporary file is gone");
    }
}
