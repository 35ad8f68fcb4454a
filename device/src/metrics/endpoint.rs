//! The endpoint that serves `GET /metrics` (see `http` for the server): the registry's
//! exposition, in the format the scraper asks for. Read-only: it exposes counts and states,
//! never payload; bind it to loopback or a trusted interface (anyone who reaches it can read
//! the counts).

use super::http::{self, Request, TEXT};
use super::negotiation::wants_openmetrics;
use prometheus_client::registry::Registry;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A running metrics endpoint. Dropping the `Endpoint` stops it.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Binds `addr` and serves `registry` there, on a thread of its own. Port 0 picks a free port.
    pub fn start(addr: SocketAddr, registry: Registry) -> io::Result<Endpoint> {
        let listener = std::net::TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("fmq-metrics".into())
            .spawn(move || http::serve(listener, &stopped, |r| answer(r, &registry)))?;
        Ok(Endpoint { addr, stop, thread: Some(thread) })
    }

    /// Returns the address that the endpoint listens on. If port 0 was asked for, the address
    /// holds the port that was chosen.
    pub fn address(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers `req`. A `GET` or `HEAD` of `/metrics` gets the exposition; any other request gets an
/// error.
fn answer(req: &Request, registry: &Registry) -> http::Answer {
    let path = req.path.split('?').next().unwrap_or("");
    if path != "/metrics" {
        return (404, TEXT, "Not found: metrics are at /metrics\n".to_owned());
    }
    if !matches!(req.method.as_str(), "GET" | "HEAD") {
        return (405, TEXT, "Method not allowed: GET /metrics\n".to_owned());
    }
    let mut body = String::with_capacity(16 << 10);
    let encoded = if wants_openmetrics(&req.accept) {
        prometheus_client::encoding::text::encode(&mut body, registry).map(|()| OPENMETRICS)
    } else {
        prometheus_client::encoding::prometheus_text::encode(&mut body, registry)
            .map(|()| prometheus_client::encoding::prometheus_text::CONTENT_TYPE)
    };
    match encoded {
        Ok(content_type) => (200, content_type, body),
        Err(e) => {
            log::error!("metrics: could not encode the exposition: {e}");
            (500, TEXT, "Could not encode the metrics\n".to_owned())
        }
    }
}
