//! Scrapes metrics endpoints every 100 ms as Prometheus would (its `Accept` header: OpenMetrics),
//! reading each answer whole, until dropped: what a monitored device pays for being watched.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const INTERVAL: Duration = Duration::from_millis(100);
const ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// A free `127.0.0.1:PORT` (bound, then let go: the device binds it a moment later).
pub fn free_address() -> Result<String, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.to_string())
}

/// A thread scraping some endpoints; stops when dropped.
#[derive(Debug)]
pub struct Scraper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Scraper {
    /// Scrapes each of `endpoints` (`host:port`) every 100 ms (one that is not up yet is tried
    /// again at the next round).
    pub fn start(endpoints: Vec<String>) -> Scraper {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut answered = 0;
            while !stopped.load(Ordering::Relaxed) {
                answered += endpoints.iter().filter(|e| scrape(e).is_some()).count() as u64;
                std::thread::sleep(INTERVAL);
            }
            answered
        });
        Scraper { stop, thread: Some(thread) }
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One scrape: the answer's length, if it came.
fn scrape(endpoint: &str) -> Option<usize> {
    let mut c = TcpStream::connect(endpoint).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(c, "GET /metrics HTTP/1.1\r\nHost: {endpoint}\r\nAccept: {ACCEPT}\r\n\r\n").ok()?;
    let mut answer = Vec::new();
    c.read_to_end(&mut answer).ok()?;
    answer.starts_with(b"HTTP/1.1 200").then_some(answer.len())
}
