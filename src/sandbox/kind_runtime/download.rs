//! HTTPS GET of a release file, following the redirects release hosts answer with.

use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

const MAX_REDIRECTS: usize = 5;
const TIMEOUT: Duration = Duration::from_secs(120);

/// Why a release file could not be downloaded.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    #[error("reading the system's CA certificates: {0}")]
    CaCertificates(#[source] std::io::Error),
    #[error("{url:?}: {source}")]
    Url {
        url: String,
        #[source]
        source: http::uri::InvalidUri,
    },
    #[error("redirect to {location:?}: {source}")]
    Redirect {
        location: String,
        #[source]
        source: http::uri::InvalidUri,
    },
    #[error("redirect from a URL without a host")]
    RedirectWithoutHost,
    #[error(transparent)]
    Request(#[from] http::Error),
    #[error("{uri}: no answer within {}s", TIMEOUT.as_secs())]
    NoAnswer { uri: String },
    #[error("{uri}: {source}")]
    Unsent {
        uri: String,
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    #[error("{uri}: {status} without a Location")]
    NoLocation { uri: String, status: http::StatusCode },
    #[error("{uri}: {status}")]
    Status { uri: String, status: http::StatusCode },
    #[error("{uri}: body not read within {}s", TIMEOUT.as_secs())]
    BodyTimeout { uri: String },
    #[error("{uri}: {source}")]
    Body {
        uri: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{url}: more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects { url: String },
}

/// Where a redirect points, resolved against the URL that answered.
pub fn redirect_target(from: &http::Uri, location: &str) -> Result<http::Uri, DownloadError> {
    let invalid = |source| DownloadError::Redirect { location: location.to_string(), source };
    let target: http::Uri = location.parse().map_err(invalid)?;
    if target.scheme().is_some() {
        return Ok(target);
    }
    let authority = from.authority().ok_or(DownloadError::RedirectWithoutHost)?;
    format!("https://{authority}{location}").parse().map_err(invalid)
}

/// The body of `url`, over HTTPS only, trusting the system's CAs.
pub async fn get(url: &str) -> Result<Vec<u8>, DownloadError> {
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(DownloadError::CaCertificates)?
        .https_only()
        .enable_http1()
        .build();
    let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build(connector);
    let mut uri: http::Uri = url.parse().map_err(|source| DownloadError::Url { url: url.to_string(), source })?;
    for _ in 0..=MAX_REDIRECTS {
        let request = http::Request::get(uri.clone()).body(Empty::new())?;
        let response = tokio::time::timeout(TIMEOUT, client.request(request))
            .await
            .map_err(|_| DownloadError::NoAnswer { uri: uri.to_string() })?
            .map_err(|source| DownloadError::Unsent { uri: uri.to_string(), source })?;
        let status = response.status();
        if status.is_redirection() {
            let location = response.headers().get(http::header::LOCATION).and_then(|l| l.to_str().ok());
            let location = location.ok_or_else(|| DownloadError::NoLocation { uri: uri.to_string(), status })?;
            uri = redirect_target(&uri, location)?;
            continue;
        }
        if !status.is_success() {
            return Err(DownloadError::Status { uri: uri.to_string(), status });
        }
        let body = tokio::time::timeout(TIMEOUT, response.into_body().collect())
            .await
            .map_err(|_| DownloadError::BodyTimeout { uri: uri.to_string() })?
            .map_err(|e| DownloadError::Body { uri: uri.to_string(), source: e.into() })?;
        return Ok(body.to_bytes().to_vec());
    }
    Err(DownloadError::TooManyRedirects { url: url.to_string() })
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
        assert!(err.to_string().contains("127.0.0.1"), "{err}");
    }
}
