//! The HTTP endpoint that serves `GET /metrics`: tiny_http parses the requests (one thread per
//! connection, its own), one thread of ours answers them in turn with the registry's exposition.
//! Read-only: it exposes counts and states, never payload; bind it to loopback or a trusted
//! interface (anyone who reaches it can read the counts, and hold connections open).

use super::negotiation::wants_openmetrics;
use prometheus_client::registry::Registry;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// How often the serving thread looks whether it is to stop.
const POLL: Duration = Duration::from_millis(200);

/// A running endpoint; dropping it stops it.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Binds `addr` (port 0: a free one) and serves `registry` there.
    pub fn start(addr: SocketAddr, registry: Registry) -> io::Result<Endpoint> {
        let server = bind(addr)?;
        let addr = server.server_addr().to_ip().ok_or_else(|| io::Error::other("not a TCP address"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("fmq-metrics".into())
            .spawn(move || serve(server, addr, &registry, &stopped))?;
        Ok(Endpoint { addr, stop, thread: Some(thread) })
    }

    /// The address it listens on (with the port chosen when 0 was asked for).
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

fn bind(addr: SocketAddr) -> io::Result<tiny_http::Server> {
    let listener = std::net::TcpListener::bind(addr)?;
    tiny_http::Server::from_listener(listener, None).map_err(io::Error::other)
}

/// Answers requests until `stop`. tiny_http's accept thread ends at the first accept error (out
/// of descriptors, say): the endpoint then listens again on the same address, so a flood of
/// connections costs scrapes while it lasts, never the endpoint.
fn serve(mut server: tiny_http::Server, addr: SocketAddr, registry: &Registry, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match server.recv_timeout(POLL) {
            Ok(Some(req)) => {
                let (status, content_type, body) = answer(&req, registry);
                let mut response = tiny_http::Response::from_string(body).with_status_code(status);
                if let Ok(h) = tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes()) {
                    response = response.with_header(h);
                }
                if let Err(e) = req.respond(response) {
                    log::debug!("metrics: a scraper left before its answer: {e}");
                }
            }
            Ok(None) => {}
            Err(e) => {
                log::error!("metrics: the endpoint stopped accepting ({e}); listening again on {addr}");
                std::thread::sleep(POLL);
                match bind(addr) {
                    Ok(s) => server = s,
                    Err(e) => log::error!("metrics: cannot listen on {addr} again: {e}"),
                }
            }
        }
    }
}

/// Status, content type and body for `req`: the exposition for `GET /metrics`, errors otherwise.
fn answer(req: &tiny_http::Request, registry: &Registry) -> (u16, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    let path = req.url().split('?').next().unwrap_or("");
    if path != "/metrics" {
        return (404, TEXT, "Not found: metrics are at /metrics\n".to_owned());
    }
    if !matches!(req.method(), tiny_http::Method::Get | tiny_http::Method::Head) {
        return (405, TEXT, "Method not allowed: GET /metrics\n".to_owned());
    }
    let accept = req.headers().iter().find(|h| h.field.equiv("Accept")).map_or("", |h| h.value.as_str());
    let mut body = String::with_capacity(16 << 10);
    let encoded = if wants_openmetrics(accept) {
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
