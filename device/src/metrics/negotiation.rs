//! Which exposition a scraper gets: the Prometheus text format (0.0.4) unless its `Accept` header
//! prefers OpenMetrics. Prometheus itself asks for OpenMetrics first; `curl` and `promtool` get
//! the text format, which `promtool check metrics` reads.

/// Returns whether a scraper whose `Accept` header is `accept` wants OpenMetrics.
///
/// The scraper wants OpenMetrics when some `application/openmetrics-text` range has a weight above
/// 0, and none of `text/plain`, `text/*` or `*/*` weighs more. Without an `Accept` header, the
/// scraper gets the text format.
pub(crate) fn wants_openmetrics(accept: &str) -> bool {
    let (mut openmetrics, mut text) = (0.0f64, 0.0f64);
    for range in accept.split(',') {
        let mut params = range.split(';').map(str::trim);
        let media = params.next().unwrap_or("").to_ascii_lowercase();
        let q = params
            .filter_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
            .find_map(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(1.0);
        match media.as_str() {
            "application/openmetrics-text" => openmetrics = openmetrics.max(q),
            "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    openmetrics > 0.0 && openmetrics >= text
}

#[cfg(test)]
mod tests {
    use super::wants_openmetrics;

    #[test]
    fn prometheus_gets_openmetrics_and_everyone_else_the_text_format() {
        let prometheus2 = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        let prometheus3 = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert!(wants_openmetrics(prometheus2));
        assert!(wants_openmetrics(prometheus3));
        assert!(!wants_openmetrics(""), "no header");
        assert!(!wants_openmetrics("*/*"), "curl");
        assert!(!wants_openmetrics("text/plain"));
        assert!(!wants_openmetrics("application/openmetrics-text;q=0,text/plain"), "refused with q=0");
        assert!(!wants_openmetrics("application/openmetrics-text;q=0.2,text/plain;q=0.9"), "text weighs more");
        assert!(wants_openmetrics("application/openmetrics-text"));
        assert!(wants_openmetrics("application/openmetrics-text;q=oops"), "a weight that does not parse counts as 1");
    }
}
