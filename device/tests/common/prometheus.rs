//! A real Prometheus server for the metrics tests (Debian's `prometheus`, which `.ci/run`
//! installs): started on a free port with its own storage, scraping the targets a test writes to
//! its file_sd file every 100 ms; queried through its HTTP API; stopped (and reaped) on drop.
//! Also `promtool check metrics`, the linter of an exposition.

#![allow(dead_code)] // each test binary uses its own part

use fairmq_shm::testing::process::{wait_until, Process, Start, GENEROUS};
use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running Prometheus.
pub struct Prometheus {
    pub url: String,
    targets: PathBuf,
    proc: Process,
    _dir: tempfile::TempDir,
}

/// Whether Prometheus is installed (`.ci/run` installs it; elsewhere a test says so and skips).
pub fn available(test: &str) -> bool {
    let found = Command::new("prometheus").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("{test}: skipped, `prometheus` is not installed (Debian: apt-get install prometheus)");
    }
    found
}

impl Prometheus {
    /// Starts a server that scrapes every 100 ms the targets of its file_sd file (none yet).
    pub fn start() -> Prometheus {
        let dir = tempfile::tempdir().expect("temporary directory");
        let targets = dir.path().join("targets.json");
        std::fs::write(&targets, "[]").unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global: {{scrape_interval: 100ms}}\nscrape_configs:\n  - job_name: fairmq\n    honor_labels: true\n    file_sd_configs: [{{files: [\"{}\"], refresh_interval: 1s}}]\n",
                targets.display()
            ),
        )
        .unwrap();
        let mut cmd = Command::new("prometheus");
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .args(["--web.listen-address=127.0.0.1:0", "--web.enable-lifecycle", "--log.level=info"]);
        let mut proc = Process::start(&mut cmd, Start { stdin: None, with_stderr: true });
        // It logs the address it asked for, then the one it got.
        let line = {
            proc.expect("msg=\"Listening on\"");
            proc.seen.iter().find(|l| l.contains("msg=\"Listening on\"")).unwrap().clone()
        };
        let addr = line.split("address=").nth(1).expect("the address it listens on").split_whitespace().next().unwrap();
        let url = format!("http://{addr}");
        let p = Prometheus { url, targets, proc, _dir: dir };
        wait_until("Prometheus ready", || get(&format!("{}/-/ready", p.url)).is_ok());
        p
    }

    /// Scrapes `targets` (`host:port` with their `device` label) from now on.
    pub fn scrape(&self, targets: &[(&str, &str)]) {
        let groups: Vec<Value> = targets
            .iter()
            .map(|(addr, device)| serde_json::json!({"targets": [addr], "labels": {"device": device}}))
            .collect();
        // Written whole, then renamed: Prometheus never reads half a file.
        let tmp = self.targets.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_string(&groups).unwrap()).unwrap();
        std::fs::rename(&tmp, &self.targets).unwrap();
        wait_until("Prometheus scrapes every target", || {
            let up = self.query("up == 1");
            up.len() == targets.len()
        });
    }

    /// The samples of the instant query `expr`: (labels, value) each.
    pub fn query(&self, expr: &str) -> Vec<(Value, f64)> {
        let body = ureq::get(format!("{}/api/v1/query", self.url))
            .query("query", expr)
            .call()
            .and_then(|mut r| r.body_mut().read_to_string())
            .unwrap_or_else(|e| panic!("query {expr}: {e}"));
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "query {expr}: {body}");
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["metric"].clone(), s["value"][1].as_str().unwrap().parse::<f64>().unwrap()))
            .collect()
    }

    /// The one value of `expr`, once it has exactly one sample.
    pub fn value(&self, expr: &str) -> f64 {
        let mut last = Vec::new();
        let deadline = Instant::now() + GENEROUS;
        while Instant::now() < deadline {
            last = self.query(expr);
            if last.len() == 1 {
                return last[0].1;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{expr} never had exactly one sample: {last:?}");
    }

    /// Waits until the one value of `expr` satisfies `ok`; returns it.
    pub fn wait_for(&self, expr: &str, what: &str, ok: impl Fn(f64) -> bool) -> f64 {
        let deadline = Instant::now() + GENEROUS;
        loop {
            let v = self.query(expr);
            if let [(_, x)] = v[..] {
                if ok(x) {
                    return x;
                }
            }
            assert!(Instant::now() < deadline, "{what}: {expr} is {v:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What Prometheus says of its targets: (scrape URL, health, last error) each.
    pub fn targets(&self) -> Vec<(String, String, String)> {
        let body = get(&format!("{}/api/v1/targets", self.url)).unwrap();
        let v: Value = serde_json::from_str(&body).unwrap();
        v["data"]["activeTargets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let s = |k: &str| t[k].as_str().unwrap_or_default().to_owned();
                (s("scrapeUrl"), s("health"), s("lastError"))
            })
            .collect()
    }

    /// The unit Prometheus recorded for `metric` (only OpenMetrics carries one).
    pub fn unit(&self, metric: &str) -> String {
        let body = get(&format!("{}/api/v1/metadata?metric={metric}", self.url)).unwrap();
        let v: Value = serde_json::from_str(&body).unwrap();
        v["data"][metric][0]["unit"].as_str().unwrap_or_default().to_owned()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = ureq::post(format!("{}/-/quit", self.url)).send_empty();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.proc.has_ended() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        // Killed and reaped by the process helper's own drop if it is still there.
    }
}

/// The body of GET `url` (an error for a status that is not 2xx).
pub fn get(url: &str) -> Result<String, ureq::Error> {
    ureq::get(url).call()?.body_mut().read_to_string()
}

/// The exposition at `url` as a scraper that asks for `accept` gets it: (content type, body).
pub fn scrape(url: &str, accept: Option<&str>) -> (String, String) {
    let mut req = ureq::get(url);
    if let Some(a) = accept {
        req = req.header("Accept", a);
    }
    let mut r = req.call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    (ct, r.body_mut().read_to_string().unwrap())
}

/// `promtool check metrics` of `exposition`: its complaints (empty when clean).
pub fn promtool_problems(exposition: &str) -> Option<String> {
    let mut p = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    p.stdin.take().unwrap().write_all(exposition.as_bytes()).unwrap();
    let out = p.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (!out.status.success() || !text.trim().is_empty()).then_some(text)
}
