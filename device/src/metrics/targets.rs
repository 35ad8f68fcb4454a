//! Prometheus' file_sd targets: the metrics endpoints of a job's devices (`fairmq-pmix-command
//! --prometheus-targets`) or of a session's (`fairmq-shmmonitor --prometheus-targets`), one group
//! per endpoint with its labels. Scrape them with `honor_labels: true`, so that the `device`
//! label an endpoint exports and its target's agree (they carry the same id).

use serde_json::json;

/// Returns the file_sd JSON, on one line, for `targets`. Each target is a pair of `host:port` and
/// labels.
pub fn file_sd(targets: impl IntoIterator<Item = (String, Vec<(&'static str, String)>)>) -> String {
    let groups: Vec<serde_json::Value> = targets
        .into_iter()
        .map(|(endpoint, labels)| {
            let labels: serde_json::Map<String, serde_json::Value> =
                labels.into_iter().map(|(k, v)| (k.to_owned(), serde_json::Value::String(v))).collect();
            json!({"targets": [endpoint], "labels": labels})
        })
        .collect();
    serde_json::Value::Array(groups).to_string()
}

/// Returns `addr` as other hosts reach it. A wildcard address becomes the IPv4 address of the
/// default route's interface. Without a default route, or without such an address, it becomes
/// 127.0.0.1.
pub fn reachable(addr: std::net::SocketAddr) -> std::net::SocketAddr {
    if !addr.ip().is_unspecified() {
        return addr;
    }
    let ip = crate::network::default_route_interface()
        .and_then(|n| crate::network::interface_ipv4(&n))
        .unwrap_or(std::net::Ipv4Addr::LOCALHOST);
    std::net::SocketAddr::new(ip.into(), addr.port())
}

/// Writes `json` to `path` as a whole.
///
/// `write` first writes a temporary file beside `path`, named after this process, and syncs it.
/// Then it renames the temporary file over `path`. Prometheus watches the file and must never read
/// half of it. Each process writes its own temporary file, so two writers never mix their files.
pub fn write(path: &std::path::Path, json: &str) -> std::io::Result<()> {
    use std::io::Write;
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
    fn one_group_per_endpoint_with_its_labels() {
        let labels = |d: &str, r: &str| vec![("device", d.to_owned()), ("rank", r.to_owned())];
        let json = file_sd([
            ("10.0.0.5:40123".to_owned(), labels("sampler", "0")),
            ("10.0.0.6:9100".to_owned(), labels("proc_1", "2")),
        ]);
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
        let a: std::net::SocketAddr = "10.1.2.3:9".parse().unwrap();
        assert_eq!(reachable(a), a);
        assert_eq!(reachable("0.0.0.0:9".parse().unwrap()).port(), 9);
        assert!(!reachable("0.0.0.0:9".parse().unwrap()).ip().is_unspecified());
    }
}
