//! What this process asks of the API server, counted by verb and resource as the API server's
//! own `apiserver_request_total` counts them: the figure to compare with a peer controller, and
//! the first place to look when the API server is busier than the jobs explain.

use http::{Method, Request};
use kube::Client;
use kube::client::{Body, ClientBuilder};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tower::util::MapRequestLayer;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub verb: &'static str,
    /// `plural.group` as kubectl names it (`workloads.kueue.x-k8s.io`, `pods`); `discovery` for
    /// the API's own listings.
    pub resource: String,
    pub subresource: String,
}

pub type ApiRequests = Family<RequestLabels, Counter>;

/// A client of `config` that counts each request it sends in `requests`.
pub fn counting_client(config: kube::Config, requests: ApiRequests) -> Result<Client, kube::Error> {
    Ok(ClientBuilder::try_from(config)?.with_layer(&counting(requests)).build())
}

/// The layer that counts each request in `requests` and passes it on unchanged.
fn counting(requests: ApiRequests) -> MapRequestLayer<impl Fn(Request<Body>) -> Request<Body> + Clone> {
    MapRequestLayer::new(move |request: Request<Body>| {
        requests.get_or_create(&labels(request.method(), request.uri())).inc();
        request
    })
}

/// The verb and resource of a request to `uri` (a path under the API server's root).
pub fn labels(method: &Method, uri: &http::Uri) -> RequestLabels {
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => ("", &[][..]),
    };
    // `namespaces/<ns>/<resource>…` is inside a namespace; `namespaces/<name>` is a Namespace.
    let (resource, name, subresource) = match rest {
        ["namespaces", _, resource, more @ ..] => (*resource, more.first(), more.get(1)),
        [resource, more @ ..] => (*resource, more.first(), more.get(1)),
        [] => ("discovery", None, None),
    };
    let watching = uri.query().is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let verb = match (method, name.is_some()) {
        (&Method::GET, true) => "get",
        (&Method::GET, false) if watching => "watch",
        (&Method::GET, false) => "list",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => "other",
    };
    let resource =
        if group.is_empty() || resource == "discovery" { resource.to_string() } else { format!("{resource}.{group}") };
    RequestLabels { verb, resource, subresource: subresource.map(|s| s.to_string()).unwrap_or_default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(method: Method, uri: &str) -> (&'static str, String, String) {
        let RequestLabels { verb, resource, subresource } = labels(&method, &uri.parse().unwrap());
        (verb, resource, subresource)
    }

    #[test]
    fn requests_are_named_as_the_api_server_counts_them() {
        let w = "workloads.kueue.x-k8s.io".to_string();
        assert_eq!(
            said(Method::GET, "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl"),
            ("get", w.clone(), "".into())
        );
        assert_eq!(
            said(Method::PATCH, "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status?fieldManager=x"),
            ("patch", w.clone(), "status".into())
        );
        assert_eq!(
            said(Method::GET, "/apis/kueue.x-k8s.io/v1beta2/workloads?&watch=true&resourceVersion=5"),
            ("watch", w.clone(), "".into())
        );
        assert_eq!(said(Method::GET, "/apis/kueue.x-k8s.io/v1beta2/workloads?limit=500"), ("list", w, "".into()));
        assert_eq!(said(Method::POST, "/api/v1/namespaces/ns/pods"), ("create", "pods".into(), "".into()));
        assert_eq!(said(Method::DELETE, "/api/v1/namespaces/ns"), ("delete", "namespaces".into(), "".into()));
        assert_eq!(said(Method::DELETE, "/api/v1/namespaces/ns/pods"), ("deletecollection", "pods".into(), "".into()));
        assert_eq!(
            said(Method::POST, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"),
            ("create", "selfsubjectaccessreviews.authorization.k8s.io".into(), "".into())
        );
        assert_eq!(said(Method::GET, "/apis/jobset.x-k8s.io/v1alpha2"), ("list", "discovery".into(), "".into()));
        assert_eq!(said(Method::GET, "/version"), ("list", "discovery".into(), "".into()));
    }

    #[tokio::test]
    async fn every_request_of_the_client_is_counted() {
        let not_found = tower::service_fn(|_: Request<Body>| async {
            let body = serde_json::json!({"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound"});
            let response = http::Response::builder().status(404).body(Body::from(serde_json::to_vec(&body).unwrap()));
            Ok::<_, std::convert::Infallible>(response.unwrap())
        });
        let requests = ApiRequests::default();
        let client = ClientBuilder::new(not_found, "default").with_layer(&counting(requests.clone())).build();
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::namespaced(client, "ns");
        for _ in 0..2 {
            assert!(pods.get_opt("p").await.unwrap().is_none());
        }
        let gets = RequestLabels { verb: "get", resource: "pods".into(), subresource: String::new() };
        assert_eq!(requests.get_or_create(&gets).get(), 2);
    }
}
