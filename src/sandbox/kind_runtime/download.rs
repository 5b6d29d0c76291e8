//! HTTPS GET of a release file, following the redirects release hosts answer with.

use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

const MAX_REDIRECTS: usize = 5;
const TIMEOUT: Duration = Duration::from_secs(120);

/// Where a redirect points, resolved against the URL that answered.
pub fn redirect_target(from: &http::Uri, location: &str) -> Result<http::Uri, String> {
    let target: http::Uri = location.parse().map_err(|e| format!("redirect to {location:?}: {e}"))?;
    if target.scheme().is_some() {
        return Ok(target);
    }
    let authority = from.authority().ok_or("redirect from a URL without a host")?;
    format!("https://{authority}{location}").parse().map_err(|e| format!("redirect to {location:?}: {e}"))
}

/// The body of `url`, over HTTPS only, trusting the system's CAs.
pub async fn get(url: &str) -> Result<Vec<u8>, String> {
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| format!("reading the system's CA certificates: {e}"))?
        .https_only()
        .enable_http1()
        .build();
    let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build(connector);
    let mut uri: http::Uri = url.parse().map_err(|e| format!("{url:?}: {e}"))?;
    for _ in 0..=MAX_REDIRECTS {
        let request = http::Request::get(uri.clone()).body(Empty::new()).map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(TIMEOUT, client.request(request))
            .await
            .map_err(|_| format!("{uri}: no answer within {}s", TIMEOUT.as_secs()))?
            .map_err(|e| format!("{uri}: {e}"))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response.headers().get(http::header::LOCATION).and_then(|l| l.to_str().ok());
            uri = redirect_target(&uri, location.ok_or(format!("{uri}: {status} without a Location"))?)?;
            continue;
        }
        if !status.is_success() {
            return Err(format!("{uri}: {status}"));
        }
        let body = tokio::time::timeout(TIMEOUT, response.into_body().collect())
            .await
            .map_err(|_| format!("{uri}: body not read within {}s", TIMEOUT.as_secs()))?
            .map_err(|e| format!("{uri}: {e}"))?;
        return Ok(body.to_bytes().to_vec());
    }
    Err(format!("{url}: more than {MAX_REDIRECTS} redirects"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_resolve_absolute_and_relative_locations() {
        let from: http::Uri = "https://github.com/a/b/releases/download/v1/manifests.yaml".parse().unwrap();
        let absolute = redirect_target(&from, "https://objects.example.com/x?sig=1").unwrap();
        assert_eq!(absolute.to_string(), "https://objects.example.com/x?sig=1");
        let relative = redirect_target(&from, "/c/d").unwrap();
        assert_eq!(relative.to_string(), "https://github.com/c/d");
    }

    #[tokio::test]
    async fn plain_http_is_refused() {
        let err = get("http://127.0.0.1:9/manifests.yaml").await.unwrap_err();
        assert!(err.contains("127.0.0.1"), "{err}");
    }
}
