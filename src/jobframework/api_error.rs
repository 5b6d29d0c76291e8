//! The API server's answers in words a user can act on. kube prints an API error with the whole
//! Status it carries (`ApiError: 404 page not found: Failed to parse error data (Status { … })`),
//! and a path the API server does not serve at all (a group or version nobody installed) is
//! answered with a bare `404 page not found` that kube's `is_not_found` does not recognise, as
//! its reason is not `NotFound`. Webhook denials, component failures, events, `submit` and
//! `watch` say it through here.

/// kube's reason for an error answer whose body is not a Status (kube-client's
/// `handle_api_errors`): the API server's HTTP mux answered, not a resource handler.
const NOT_A_STATUS: &str = "Failed to parse error data";

/// What a user is told for a kind the cluster does not serve.
pub fn not_served(kind: &str, api_version: &str) -> String {
    format!("the cluster does not serve {kind} in {api_version}: is its CRD installed (kubectl get crds)?")
}

/// True when the API server serves nothing at the path asked (its group or version is
/// unknown): nothing of that kind can exist there. A webhook's 404 denial, or an object that
/// does not exist, is not this.
pub fn is_unserved(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404 && status.reason == NOT_A_STATUS)
}

/// True when the API server refused the request for lack of permission.
pub fn is_forbidden(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 403)
}

/// The error in a sentence: the API server's own message for a refusal, the innermost cause of
/// a request that never got an answer.
pub fn in_words(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) if is_unserved(err) => {
            format!("the API server serves nothing at that path ({})", status.message)
        }
        kube::Error::Api(status) if status.message.is_empty() => format!("{} ({})", status.reason, status.code),
        kube::Error::Api(status) => status.message.clone(),
        kube::Error::HyperError(_) | kube::Error::Service(_) => {
            format!("cannot reach the API server: {}", crate::kube_util::innermost_cause(err))
        }
        other => other.to_string(),
    }
}

/// A client of an API server that serves nothing: every path gets the bare `404 page not
/// found` kube-apiserver's HTTP mux answers for a group it does not know.
#[cfg(test)]
pub fn serving_nothing() -> kube::Client {
    use http::{Request, Response};
    use kube::client::Body;

    let service = tower::service_fn(|_: Request<Body>| async {
        let answer = Response::builder().status(404).header("content-type", "text/plain; charset=utf-8");
        Ok::<_, std::convert::Infallible>(answer.body(Body::from(b"404 page not found\n".to_vec())).unwrap())
    });
    kube::Client::new(service, "default")
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::*;

    /// As kube-client builds it from the API server's plain-text answer.
    fn page_not_found() -> kube::Error {
        kube::Error::Api(Status::failure("404 page not found", NOT_A_STATUS).with_code(404).boxed())
    }

    fn status(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Status::failure(message, reason).with_code(code).boxed())
    }

    #[tokio::test]
    async fn only_an_unserved_path_is_unserved() {
        assert!(is_unserved(&page_not_found()));
        let listed = kube::Api::<crate::api::kueue::LocalQueue>::all(serving_nothing()).list(&Default::default()).await;
        assert!(listed.as_ref().is_err_and(is_unserved), "as kube reads the API server's answer: {listed:?}");
        let missing = status(404, "NotFound", r#"jobs.batch "x" not found"#);
        let webhook = status(404, "", r#"admission webhook "vjob.kb.io" denied the request: not found"#);
        for served in [missing, webhook, status(500, NOT_A_STATUS, "oops")] {
            assert!(!is_unserved(&served), "{served:?}");
        }
    }

    #[test]
    fn errors_read_without_kubes_dump_of_the_status() {
        let cases = [
            (page_not_found(), "the API server serves nothing at that path (404 page not found)"),
            (
                status(403, "Forbidden", r#"jobs.batch is forbidden: User "alice" cannot create resource "jobs""#),
                r#"jobs.batch is forbidden: User "alice" cannot create resource "jobs""#,
            ),
            (status(429, "TooManyRequests", ""), "TooManyRequests (429)"),
        ];
        for (err, words) in cases {
            assert_eq!(in_words(&err), words);
            assert!(!in_words(&err).contains("Status {"), "{err}");
        }
        assert_eq!(
            not_served("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1"),
            "the cluster does not serve LeaderWorkerSet in leaderworkerset.x-k8s.io/v1: is its CRD installed \
             (kubectl get crds)?"
        );
    }

    #[tokio::test]
    async fn an_unreachable_api_server_is_named_with_the_cause() {
        // Nothing listens on port 1 of the loopback address.
        let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let err = client.apiserver_version().await.unwrap_err();
        let words = in_words(&err);
        assert!(words.starts_with("cannot reach the API server: "), "{words}");
        assert!(words.to_lowercase().contains("refused"), "{words}");
    }
}
