use std::collections::BTreeMap;

use http::Method;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::*;
use crate::test_api_server::{Requests, requested, scripted_client};

const HOUR: Duration = Duration::from_secs(3600);

fn at(seconds: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_700_000_000 + seconds).unwrap()
}

fn issue(now: OffsetDateTime, validity: Duration, current_bundle: Option<&str>) -> ServingPair {
    ServingPair::issue(&webhook_dns_names(), validity, now, current_bundle).unwrap()
}

/// The Secret as the install makes it: empty, but for what the API server adds.
fn empty_secret() -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some("kueue-ext-webhook-cert".into()),
            namespace: Some(NAMESPACE.into()),
            resource_version: Some("41".into()),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        ..Secret::default()
    }
}

#[test]
fn validities_are_go_durations_from_a_minute_to_a_century() {
    assert_eq!(parse_validity("8760h"), Ok(365 * 24 * HOUR));
    assert_eq!(parse_validity("90s"), Ok(Duration::from_secs(90)));
    for refused in ["59s", "0", "876001h", "1d", ""] {
        assert!(parse_validity(refused).is_err(), "{refused}");
    }
}

#[test]
fn renewal_is_due_two_thirds_into_the_validity() {
    let pair = |not_before, not_after| ServingPair {
        cert_pem: String::new(),
        key_pem: String::new(),
        ca_bundle: String::new(),
        not_before: at(not_before),
        not_after: at(not_after),
    };
    for (not_before, not_after, now, due) in [
        (0, 90, 59, false),
        (0, 90, 60, true),
        (0, 90, 200, true),
        (-9, 90, 56, false),
        (-9, 90, 57, true),
        (0, 3 * 8760 * 3600, 2 * 8760 * 3600 - 1, false),
        (0, 3 * 8760 * 3600, 2 * 8760 * 3600, true),
    ] {
        assert_eq!(pair(not_before, not_after).renewal_due(at(now)), due, "{not_before}..{not_after} at {now}");
    }
}

#[test]
fn a_short_validity_is_backdated_by_a_tenth_and_a_long_one_by_five_minutes() {
    let short = issue(at(0), Duration::from_secs(90), None);
    assert_eq!((short.not_before, short.not_after), (at(-9), at(90)));
    let long = issue(at(0), 8760 * HOUR, None);
    assert_eq!((long.not_before, long.not_after), (at(-300), at(8760 * 3600)));
}

#[test]
fn a_renewed_bundle_holds_the_new_ca_then_the_current_one_and_no_older() {
    let [a, b, c] = [1, 2, 3].map(|i| issue(at(i), HOUR, None).ca_bundle);
    assert_eq!(renewed_bundle(&c, None), c);
    assert_eq!(renewed_bundle(&c, Some("not PEM")), c);
    let two = renewed_bundle(&b, Some(&a));
    assert_eq!(two, format!("{b}{a}"));
    assert_eq!(renewed_bundle(&c, Some(&two)), format!("{c}{b}"), "a is gone");
    assert_eq!(certificates(&renewed_bundle(&c, Some(&two))).count(), 2);
}

#[test]
fn a_bundle_trusts_the_pairs_its_cas_signed_while_they_are_valid() {
    let first = issue(at(0), 10 * HOUR, None);
    let second = issue(at(2400), 10 * HOUR, Some(&first.ca_bundle));
    let third = issue(at(4800), 10 * HOUR, Some(&second.ca_bundle));
    let during = at(2500);
    assert!(first.trusted_by(first.ca_bundle.as_bytes(), during));
    assert!(first.trusted_by(second.ca_bundle.as_bytes(), during), "the current pair, while replicas reload");
    assert!(second.trusted_by(second.ca_bundle.as_bytes(), during));
    assert!(!second.trusted_by(first.ca_bundle.as_bytes(), during), "another CA of the same name");
    assert!(!first.trusted_by(third.ca_bundle.as_bytes(), at(4900)), "dropped two renewals later");
    assert!(!first.trusted_by(b"", during));
    assert!(!first.trusted_by(first.ca_bundle.as_bytes(), at(36001)), "expired");
}

#[test]
fn a_pair_cert_manager_wrote_is_read_with_the_dates_of_its_certificate() {
    let pair = issue(at(0), HOUR, None);
    let mut written = pair.written_into(empty_secret());
    written.metadata.annotations = None;
    assert!(ServingPair::from_secret(&written, at(60)).unwrap_err().contains(NOT_BEFORE), "not ours");
    assert_eq!(ServingPair::from_cert_manager_secret(&written, at(60)), Ok(pair));
    let data = written.data.as_mut().unwrap();
    data.insert(CERT.into(), ByteString(b"not PEM".to_vec()));
    assert!(ServingPair::from_cert_manager_secret(&written, at(60)).unwrap_err().contains("not a PEM certificate"));
}

#[test]
fn a_pair_round_trips_through_the_secret_keeping_the_rest() {
    let pair = issue(at(0), HOUR, None);
    let mut secret = empty_secret();
    secret.metadata.annotations = Some(BTreeMap::from([("keep".to_string(), "me".to_string())]));
    let written = pair.written_into(secret);
    assert_eq!(ServingPair::from_secret(&written, at(60)), Ok(pair));
    let annotations = written.metadata.annotations.as_ref().unwrap();
    assert_eq!(annotations[NOT_BEFORE], "2023-11-14T22:08:20Z");
    assert_eq!(annotations[NOT_AFTER], "2023-11-14T23:13:20Z");
    assert_eq!(annotations["keep"], "me");
    assert_eq!(written.metadata.resource_version.as_deref(), Some("41"));
    let keys: Vec<_> = written.data.as_ref().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["ca.crt", "tls.crt", "tls.key"]);
}

#[test]
fn a_secret_that_holds_no_valid_pair_says_why() {
    let pair = issue(at(0), HOUR, None);
    let other = issue(at(1), HOUR, None);
    let without = |key: &str| {
        let mut secret = pair.written_into(empty_secret());
        secret.data.as_mut().unwrap().remove(key);
        secret.metadata.annotations.as_mut().unwrap().remove(key);
        secret
    };
    let mut mismatched = pair.clone();
    mismatched.key_pem = other.key_pem.clone();
    let mut untrusted = pair.clone();
    untrusted.ca_bundle = other.ca_bundle.clone();
    let mut garbled = pair.written_into(empty_secret());
    garbled.metadata.annotations.as_mut().unwrap().insert(NOT_AFTER.into(), "tomorrow".into());
    for (secret, now, why) in [
        (empty_secret(), at(60), "it holds no certificate yet"),
        (without(CERT), at(60), "it has no tls.crt"),
        (without(NOT_BEFORE), at(60), "it has no annotation kueue-ext.dev/not-before"),
        (garbled, at(60), "its annotation kueue-ext.dev/not-after=\"tomorrow\" is no RFC 3339 time"),
        (mismatched.written_into(empty_secret()), at(60), "its tls.crt and tls.key do not make a pair"),
        (untrusted.written_into(empty_secret()), at(60), "its ca.crt does not make its tls.crt valid now"),
        (pair.written_into(empty_secret()), at(3601), "its ca.crt does not make its tls.crt valid now"),
    ] {
        let found = ServingPair::from_secret(&secret, now).unwrap_err();
        assert!(found.starts_with(why), "{found:?} does not start with {why:?}");
    }
}

/// A webhook configuration of `kind` named `name` whose webhooks have these bundles (PEM).
fn configuration(kind: &str, name: &str, bundles: &[Option<&str>]) -> Value {
    let webhooks: Vec<Value> = bundles
        .iter()
        .enumerate()
        .map(|(i, bundle)| {
            let mut config = json!({"service": {"name": WEBHOOK_SERVICE, "namespace": NAMESPACE}});
            if let Some(bundle) = bundle {
                config["caBundle"] = json!(BASE64.encode(bundle));
            }
            json!({"name": format!("hook-{i}.kueue-ext.dev"), "clientConfig": config})
        })
        .collect();
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name, "resourceVersion": "7"}, "webhooks": webhooks,
    })
}

#[test]
fn a_bundle_patch_tests_the_version_and_sets_only_the_bundles_that_differ() {
    let object = |bundles| serde_json::from_value(configuration("MutatingWebhookConfiguration", "m", bundles)).unwrap();
    let patch = bundle_patch(&object(&[Some("CA"), None, Some("OLD")]), "CA").unwrap();
    assert_eq!(
        serde_json::to_value(patch).unwrap(),
        json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
            {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": "Q0E="},
            {"op": "add", "path": "/webhooks/2/clientConfig/caBundle", "value": "Q0E="},
        ])
    );
    assert!(bundle_patch(&object(&[Some("CA"), Some("CA")]), "CA").is_none());
    assert!(bundle_patch(&object(&[]), "CA").is_none());
}

#[test]
fn a_relist_tells_only_once_complete_what_it_found() {
    let mut relist = None;
    let named = |rv: &str| {
        let mut secret = empty_secret();
        secret.metadata.resource_version = Some(rv.into());
        secret
    };
    let version = |seen: Option<Seen>| match seen {
        Some(Seen::Found(secret)) => secret.metadata.resource_version.clone().unwrap(),
        Some(Seen::Missing) => "missing".into(),
        Some(Seen::Unlisted) => "unlisted".into(),
        None => "nothing new".into(),
    };
    assert_eq!(version(observe(Event::Init, &mut relist)), "nothing new");
    assert_eq!(version(observe(Event::InitDone, &mut relist)), "missing");
    assert_eq!(version(observe(Event::Init, &mut relist)), "nothing new");
    assert_eq!(version(observe(Event::InitApply(named("1")), &mut relist)), "nothing new");
    assert_eq!(version(observe(Event::InitDone, &mut relist)), "1");
    assert_eq!(version(observe(Event::Apply(named("2")), &mut relist)), "2");
    assert_eq!(version(observe(Event::Delete(named("2")), &mut relist)), "missing");
}

const MUTATING_PATH: &str =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kueue-ext-mutating-webhook-configuration";
const VALIDATING_PATH: &str =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kueue-ext-validating-webhook-configuration";
const SECRET_PATH: &str = "/api/v1/namespaces/kueue-ext-system/secrets/kueue-ext-webhook-cert";

/// A cluster with our two compiled webhook configurations (with these bundles) and none for
/// configured kinds; a patch is answered with `patched`, or the configuration unchanged.
fn cluster(mutating: Value, validating: Value, patched: Option<Value>) -> (Keeper, Requests, Kept) {
    let (client, requests) = scripted_client(move |method, path| match (method.clone(), path) {
        (Method::GET, MUTATING_PATH) => Ok(mutating.clone()),
        (Method::GET, VALIDATING_PATH) => Ok(validating.clone()),
        (Method::GET, _) => Err(404),
        (Method::PATCH, MUTATING_PATH) => Ok(patched.clone().unwrap_or(mutating.clone())),
        (Method::PATCH, VALIDATING_PATH) => Ok(patched.clone().unwrap_or(validating.clone())),
        (Method::PUT, SECRET_PATH) => Ok(serde_json::to_value(empty_secret()).unwrap()),
        _ => Err(500),
    });
    let renewal = Renewal::ByLeader { validity: HOUR };
    let source = SecretSource { namespace: NAMESPACE.into(), name: "kueue-ext-webhook-cert".into(), renewal };
    let (pairs, published) = watch::channel(None);
    let trusted = Arc::new(AtomicBool::new(false));
    let keeper = Keeper {
        secrets: Api::namespaced(client.clone(), NAMESPACE),
        source,
        configurations: configuration_apis(&client),
        pairs,
        trusted: trusted.clone(),
    };
    (keeper, requests, Kept { pairs: published, trusted })
}

const READS: [&str; 4] = [
    "GET /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kueue-ext-mutating-webhook-configuration",
    "GET /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kueue-ext-validating-webhook-configuration",
    "GET /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kueue-ext-configured-mutating-webhook-configuration",
    "GET /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kueue-ext-configured-validating-webhook-configuration",
];

fn found(secret: Secret) -> Seen {
    Seen::Found(Arc::new(secret))
}

/// The PEM bundle a JSON patch sets.
fn bundle_set_by(patch: &Value) -> String {
    let encoded = patch[1]["value"].as_str().unwrap();
    String::from_utf8(BASE64.decode(encoded).unwrap()).unwrap()
}

#[tokio::test]
async fn a_due_renewal_writes_the_bundles_before_the_secret() {
    let current = issue(at(0), HOUR, None);
    let bundles = [Some(current.ca_bundle.as_str()); 2];
    let mutating = configuration("MutatingWebhookConfiguration", MUTATING_WEBHOOK, &bundles);
    let validating = configuration("ValidatingWebhookConfiguration", VALIDATING_WEBHOOK, &bundles[..1]);
    let (keeper, requests, kept) = cluster(mutating, validating, None);
    let secret = current.written_into(empty_secret());
    let now = at(2500);

    let wait = keeper.pass(&found(secret), true, now).await.unwrap();

    let field_manager = "fieldManager=kueue-ext-controller";
    let writes = [
        format!("PATCH {MUTATING_PATH}?{field_manager}"),
        format!("PATCH {VALIDATING_PATH}?{field_manager}"),
        format!("PUT {SECRET_PATH}?{field_manager}"),
    ];
    let expected: Vec<String> = READS.iter().map(|read| read.to_string()).chain(writes).collect();
    assert_eq!(requested(&requests), expected);
    let bodies: Vec<Value> = requests.lock().unwrap().iter().map(|(_, body)| body.clone()).collect();
    let (mutating_patch, validating_patch, written) = (&bodies[4], &bodies[5], &bodies[6]);
    assert_eq!(mutating_patch[0], json!({"op": "test", "path": "/metadata/resourceVersion", "value": "7"}));
    assert_eq!(mutating_patch.as_array().unwrap().len(), 3, "both webhooks: {mutating_patch}");
    let written: Secret = serde_json::from_value(written.clone()).unwrap();
    assert_eq!(written.metadata.resource_version.as_deref(), Some("41"), "an update only if no one was first");
    let renewed = ServingPair::from_secret(&written, now).unwrap();
    assert_eq!(bundle_set_by(mutating_patch), renewed.ca_bundle);
    assert_eq!(bundle_set_by(validating_patch), renewed.ca_bundle);
    assert_eq!(certificates(&renewed.ca_bundle).nth(1), certificates(&current.ca_bundle).next(), "then the current CA");
    assert!(current.trusted_by(renewed.ca_bundle.as_bytes(), now), "the pair served until replicas reload");
    assert_eq!(renewed.not_after, now + HOUR);
    assert_eq!(kept.pairs.borrow().as_deref(), Some(&current), "served until the Secret's watch brings the new one");
    assert!(kept.trusted.load(Ordering::Relaxed), "the served pair stays trusted throughout");
    assert_eq!(wait, CHECK_EVERY);
}

#[tokio::test]
async fn a_replica_that_does_not_lead_writes_nothing() {
    let current = issue(at(0), HOUR, None);
    let mutating = configuration("MutatingWebhookConfiguration", MUTATING_WEBHOOK, &[None]);
    let validating = configuration("ValidatingWebhookConfiguration", VALIDATING_WEBHOOK, &[None]);
    let (keeper, requests, kept) = cluster(mutating, validating, None);

    keeper.pass(&found(empty_secret()), false, at(60)).await.unwrap();
    assert_eq!(requested(&requests), READS, "an empty Secret is not this replica's to fill");
    assert!(kept.pairs.borrow().is_none());

    requests.lock().unwrap().clear();
    keeper.pass(&found(current.written_into(empty_secret())), false, at(60)).await.unwrap();
    assert_eq!(requested(&requests), READS, "nor a drifted caBundle to repair");
    assert_eq!(kept.pairs.borrow().as_deref(), Some(&current), "but it serves the Secret's pair");
    assert!(!kept.trusted.load(Ordering::Relaxed), "which the API server does not trust yet");

    requests.lock().unwrap().clear();
    keeper.pass(&found(current.written_into(empty_secret())), false, at(2500)).await.unwrap();
    assert_eq!(requested(&requests), READS, "nor a due renewal to make");
}

#[tokio::test]
async fn the_leader_restores_a_ca_bundle_that_an_install_wiped() {
    let current = issue(at(0), HOUR, None);
    let mutating = configuration("MutatingWebhookConfiguration", MUTATING_WEBHOOK, &[Some(&current.ca_bundle)]);
    let validating = configuration("ValidatingWebhookConfiguration", VALIDATING_WEBHOOK, &[None, None]);
    let restored = configuration(
        "ValidatingWebhookConfiguration",
        VALIDATING_WEBHOOK,
        &[Some(&current.ca_bundle), Some(&current.ca_bundle)],
    );
    let (keeper, requests, kept) = cluster(mutating, validating, Some(restored));

    let wait = keeper.pass(&found(current.written_into(empty_secret())), true, at(60)).await.unwrap();

    let mut expected: Vec<String> = READS.iter().map(|read| read.to_string()).collect();
    expected.push(format!("PATCH {VALIDATING_PATH}?fieldManager=kueue-ext-controller"));
    assert_eq!(requested(&requests), expected, "no renewal, and the trusting configuration untouched");
    let patch = requests.lock().unwrap()[4].1.clone();
    assert_eq!(bundle_set_by(&patch), current.ca_bundle);
    assert!(kept.trusted.load(Ordering::Relaxed));
    assert_eq!(wait, CHECK_EVERY, "the renewal is 40 minutes away");
}

#[tokio::test]
async fn the_next_pass_comes_when_the_renewal_falls_due() {
    let current = issue(at(0), Duration::from_secs(90), None);
    let trusting = |kind, name| configuration(kind, name, &[Some(&current.ca_bundle)]);
    let (keeper, _, _) = cluster(
        trusting("MutatingWebhookConfiguration", MUTATING_WEBHOOK),
        trusting("ValidatingWebhookConfiguration", VALIDATING_WEBHOOK),
        None,
    );
    let wait = keeper.pass(&found(current.written_into(empty_secret())), true, at(50)).await.unwrap();
    assert_eq!(wait, Duration::from_secs(7), "due at 57 s: 2/3 of 90 s backdated by 9 s");
}

#[tokio::test]
async fn a_missing_secret_is_waited_for_without_a_write() {
    let (keeper, requests, kept) = cluster(json!({}), json!({}), None);
    assert_eq!(keeper.pass(&Seen::Missing, true, at(0)).await.unwrap(), CHECK_EVERY);
    assert_eq!(keeper.pass(&Seen::Unlisted, true, at(0)).await.unwrap(), CHECK_EVERY);
    assert!(requested(&requests).is_empty());
    assert!(kept.pairs.borrow().is_none());
}
