//! The webhook serving certificate, which the controller keeps itself: in a Secret that every
//! replica serves from, and in the `caBundle` of our webhook configurations, which tells the API
//! server whom to trust. No CA key is ever stored: each renewal makes a new CA, and the bundle
//! keeps the previous one until the next renewal, so a replica still serving the previous pair
//! stays trusted until it has taken up the new one.
//!
//! Only the leader writes, and it writes the bundles before the Secret: the API server trusts a
//! pair before any replica can serve it.
//!
//! Under cert-manager (`install --cert-manager`) no replica writes: every one serves and reloads
//! what a Certificate keeps in the Secret, ready once cert-manager's CA injector made it trusted.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, Patch};
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::jobframework::field_manager::{patch_params, post_params};
use crate::jobframework::watches;
use crate::manifests::{
    CONFIGURED_MUTATING_WEBHOOK, CONFIGURED_VALIDATING_WEBHOOK, MUTATING_WEBHOOK, NAMESPACE, VALIDATING_WEBHOOK,
    WEBHOOK_SERVICE, webhook_dns_names,
};

pub use crate::manifests::{CERT_NOT_AFTER as NOT_AFTER, CERT_NOT_BEFORE as NOT_BEFORE};
/// The keys controller-runtime and cert-manager give a serving pair and its CA.
const CERT: &str = "tls.crt";
const KEY: &str = "tls.key";
const CA: &str = "ca.crt";

/// How often each replica compares the webhook configurations with the Secret when nothing
/// happens: someone may apply the configurations again without their `caBundle`.
const CHECK_EVERY: Duration = Duration::from_secs(30);
/// How soon a failed read or write is tried again.
const RETRY: Duration = Duration::from_secs(5);
/// Bounds of `--cert-validity`. Below a minute the leader would renew about as fast as the
/// replicas take a pair up; past a century the dates leave what X.509 and the clock can say.
const SHORTEST: Duration = Duration::from_secs(60);
const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The Secret the controller serves its certificate from, and who renews it.
#[derive(Clone, Debug)]
pub struct SecretSource {
    pub namespace: String,
    pub name: String,
    pub renewal: Renewal,
}

/// Who writes the serving pair into the Secret and its CA into the webhook configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// The leader, each pair valid for `validity`.
    ByLeader { validity: Duration },
    /// cert-manager: a Certificate into the Secret, its CA injector into the `caBundle`s.
    ByCertManager,
}

/// `--cert-validity`: a Go duration from a minute to a century.
pub fn parse_validity(text: &str) -> Result<Duration, String> {
    let validity = crate::go_duration::parse_go_duration(text).map_err(|e| e.to_string())?;
    if !(SHORTEST..=LONGEST).contains(&validity) {
        return Err(format!("{text} is not between 1m and 876000h (a century)"));
    }
    Ok(validity)
}

/// A serving pair as the Secret holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingPair {
    pub cert_pem: String,
    pub key_pem: String,
    /// The CAs the API server is to trust: the one that signed `cert_pem` first, then the one
    /// before it.
    pub ca_bundle: String,
    pub not_before: OffsetDateTime,
    pub not_after: OffsetDateTime,
}

impl ServingPair {
    /// A new CA, and a pair it signs for `dns_names`, valid from `now` for `validity`. The bundle
    /// is the new CA, then the first of `current_bundle` (the CA of the pair this one replaces).
    pub fn issue(
        dns_names: &[String],
        validity: Duration,
        now: OffsetDateTime,
        current_bundle: Option<&str>,
    ) -> Result<ServingPair, rcgen::Error> {
        // Whole seconds, as X.509 writes them: the annotations then say what the certificate says.
        let now = now.replace_nanosecond(0).unwrap_or(now);
        let (not_before, not_after) = (now - backdating(validity), now + validity);
        let mut ca = CertificateParams::default();
        ca.distinguished_name = common_name(&format!("{WEBHOOK_SERVICE}-ca-{}", now.unix_timestamp()));
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        (ca.not_before, ca.not_after) = (not_before, not_after);
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate()?)?;

        let mut leaf = CertificateParams::new(dns_names.to_vec())?;
        leaf.distinguished_name = common_name(WEBHOOK_SERVICE);
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        (leaf.not_before, leaf.not_after) = (not_before, not_after);
        let key = KeyPair::generate()?;
        let cert = leaf.signed_by(&key, &ca)?;
        Ok(ServingPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            ca_bundle: renewed_bundle(&ca.pem(), current_bundle),
            not_before,
            not_after,
        })
    }

    /// The pair `secret` holds, if it is whole and valid at `now`: the certificate matches the
    /// key and its own bundle trusts it. Otherwise why not, for the log.
    pub fn from_secret(secret: &Secret, now: OffsetDateTime) -> Result<ServingPair, String> {
        Self::read(secret, now, |_| Ok((annotated_time(secret, NOT_BEFORE)?, annotated_time(secret, NOT_AFTER)?)))
    }

    /// As [`Self::from_secret`], for a Secret cert-manager wrote: it annotates no dates, so they
    /// are read from the certificate.
    pub fn from_cert_manager_secret(secret: &Secret, now: OffsetDateTime) -> Result<ServingPair, String> {
        Self::read(secret, now, validity_of)
    }

    fn read(
        secret: &Secret,
        now: OffsetDateTime,
        dates: impl FnOnce(&str) -> Result<(OffsetDateTime, OffsetDateTime), String>,
    ) -> Result<ServingPair, String> {
        if secret.data.as_ref().is_none_or(|data| data.is_empty()) {
            return Err("it holds no certificate yet".into());
        }
        let cert_pem = text(secret, CERT).ok_or(format!("it has no {CERT}"))?;
        let (not_before, not_after) = dates(&cert_pem)?;
        let pair = ServingPair {
            cert_pem,
            key_pem: text(secret, KEY).ok_or(format!("it has no {KEY}"))?,
            ca_bundle: text(secret, CA).ok_or(format!("it has no {CA}"))?,
            not_before,
            not_after,
        };
        pair.certified_key().map_err(|e| format!("its {CERT} and {KEY} do not make a pair: {e}"))?;
        if !pair.trusted_by(pair.ca_bundle.as_bytes(), now) {
            return Err(format!("its {CA} does not make its {CERT} valid now"));
        }
        Ok(pair)
    }

    /// `secret` holding this pair: data and annotations replaced, the rest kept; the
    /// resourceVersion too, so that the update fails if another writer got there first. The
    /// managedFields go: the API server keeps them when an update leaves them out.
    pub fn written_into(&self, mut secret: Secret) -> Secret {
        secret.metadata.managed_fields = None;
        secret.data = Some(
            [(CERT, &self.cert_pem), (KEY, &self.key_pem), (CA, &self.ca_bundle)]
                .into_iter()
                .map(|(key, pem)| (key.to_string(), ByteString(pem.clone().into_bytes())))
                .collect(),
        );
        let annotations = secret.metadata.annotations.get_or_insert_default();
        for (key, at) in [(NOT_BEFORE, self.not_before), (NOT_AFTER, self.not_after)] {
            annotations.insert(key.to_string(), rfc3339(at));
        }
        secret
    }

    /// Two thirds into the validity, as cert-manager renews: the last third leaves time to
    /// retry, and a leader that is down a while to come back.
    pub fn renewal_at(&self) -> OffsetDateTime {
        self.not_before + (self.not_after - self.not_before) * 2 / 3
    }

    pub fn renewal_due(&self, now: OffsetDateTime) -> bool {
        now >= self.renewal_at()
    }

    /// Whether a client trusting `bundle` (PEM) accepts this certificate at `now` under the name
    /// the API server dials: a signature checked, not a name compared, since every CA of ours
    /// has the same kind of name.
    pub fn trusted_by(&self, bundle: &[u8], now: OffsetDateTime) -> bool {
        let mut roots = rustls::RootCertStore::empty();
        roots.add_parsable_certificates(CertificateDer::pem_slice_iter(bundle).filter_map(Result::ok));
        let Ok(leaf) = CertificateDer::from_pem_slice(self.cert_pem.as_bytes()) else { return false };
        let Ok(name) = ServerName::try_from(api_server_name()) else { return false };
        let Ok(seconds) = u64::try_from(now.unix_timestamp()) else { return false };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let Ok(verifier) = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build() else {
            return false;
        };
        let at = UnixTime::since_unix_epoch(Duration::from_secs(seconds));
        verifier.verify_server_cert(&leaf, &[], &name, &[], at).is_ok()
    }

    fn certified_key(&self) -> Result<CertifiedKey, String> {
        let chain: Vec<_> = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes()).map_err(|e| e.to_string())?;
        CertifiedKey::from_der(chain, key, &rustls::crypto::ring::default_provider()).map_err(|e| e.to_string())
    }
}

/// The name the API server checks the certificate against: it dials a Service reference as
/// `<service>.<namespace>.svc`.
fn api_server_name() -> String {
    format!("{WEBHOOK_SERVICE}.{NAMESPACE}.svc")
}

/// How far back a certificate's validity starts: a tenth of it, at most five minutes, so an API
/// server whose clock is a little behind ours accepts a fresh one, and a short validity in a
/// test is not spent on it.
fn backdating(validity: Duration) -> Duration {
    (validity / 10).min(Duration::from_secs(300))
}

fn common_name(name: &str) -> DistinguishedName {
    let mut distinguished = DistinguishedName::new();
    distinguished.push(DnType::CommonName, name);
    distinguished
}

fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).unwrap_or_else(|_| at.to_string())
}

fn text(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok().filter(|text| !text.trim().is_empty())
}

fn annotated_time(secret: &Secret, key: &str) -> Result<OffsetDateTime, String> {
    let value = secret.annotations().get(key).ok_or(format!("it has no annotation {key}"))?;
    OffsetDateTime::parse(value, &Rfc3339)
        .map_err(|e| format!("its annotation {key}={value:?} is no RFC 3339 time: {e}"))
}

/// The validity of the first certificate of `cert_pem`.
fn validity_of(cert_pem: &str) -> Result<(OffsetDateTime, OffsetDateTime), String> {
    let unreadable = |e: String| format!("its {CERT} is not a PEM certificate: {e}");
    let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()).map_err(|e| unreadable(e.to_string()))?;
    let cert = pem.parse_x509().map_err(|e| unreadable(e.to_string()))?;
    Ok((cert.validity().not_before.to_datetime(), cert.validity().not_after.to_datetime()))
}

/// The certificates of a PEM bundle, each as its own PEM text.
fn certificates(bundle: &str) -> impl Iterator<Item = &str> {
    const END: &str = "-----END CERTIFICATE-----";
    bundle.match_indices("-----BEGIN CERTIFICATE-----").filter_map(move |(start, _)| {
        let length = bundle[start..].find(END)? + END.len();
        Some(&bundle[start..start + length])
    })
}

/// The bundle after a renewal: the new CA, then the CA of the pair the replicas serve until they
/// take the new one up. Any older CA goes: no replica serves what it signed any more.
pub fn renewed_bundle(new_ca: &str, current_bundle: Option<&str>) -> String {
    let current = current_bundle.and_then(|bundle| certificates(bundle).next());
    certificates(new_ca).take(1).chain(current).map(|pem| format!("{pem}\n")).collect()
}

/// Each webhook's `caBundle` in a webhook configuration, decoded (empty where there is none).
fn ca_bundles(configuration: &DynamicObject) -> Vec<Vec<u8>> {
    let webhooks = configuration.data["webhooks"].as_array().map(Vec::as_slice).unwrap_or_default();
    webhooks
        .iter()
        .map(|webhook| {
            let encoded = webhook["clientConfig"]["caBundle"].as_str().unwrap_or_default();
            BASE64.decode(encoded).unwrap_or_default()
        })
        .collect()
}

/// Whether the API server, calling any webhook of `configuration`, trusts `pair`.
fn trusts(configuration: &DynamicObject, pair: &ServingPair, now: OffsetDateTime) -> bool {
    ca_bundles(configuration).iter().all(|bundle| pair.trusted_by(bundle, now))
}

/// The JSON patch that sets every webhook's `caBundle` to `bundle` (PEM), if one differs. It
/// tests the resourceVersion first: it fails if another writer changed the configuration since
/// it was read, rather than write over what it did.
fn bundle_patch(configuration: &DynamicObject, bundle: &str) -> Option<json_patch::Patch> {
    let encoded = BASE64.encode(bundle);
    let changes: Vec<Value> = ca_bundles(configuration)
        .iter()
        .enumerate()
        .filter(|(_, current)| current.as_slice() != bundle.as_bytes())
        .map(|(i, _)| json!({"op": "add", "path": format!("/webhooks/{i}/clientConfig/caBundle"), "value": encoded}))
        .collect();
    if changes.is_empty() {
        return None;
    }
    let version = configuration.metadata.resource_version.clone().unwrap_or_default();
    let test = json!({"op": "test", "path": "/metadata/resourceVersion", "value": version});
    serde_json::from_value(Value::Array([test].into_iter().chain(changes).collect())).ok()
}

/// What this replica knows of the Secret.
#[derive(Clone, Debug)]
enum Seen {
    /// Not yet listed.
    Unlisted,
    Missing,
    Found(Arc<Secret>),
}

/// Folds one watch event into what this replica knows of the Secret. A relist tells nothing
/// until it is complete (it may find nothing), so `relist` gathers it.
fn observe(event: Event<Secret>, relist: &mut Option<Option<Secret>>) -> Option<Seen> {
    match event {
        Event::Init => {
            *relist = Some(None);
            None
        }
        Event::InitApply(secret) => {
            *relist = Some(Some(secret));
            None
        }
        Event::InitDone => {
            relist.take().map(|found| found.map_or(Seen::Missing, |secret| Seen::Found(Arc::new(secret))))
        }
        Event::Apply(secret) => Some(Seen::Found(Arc::new(secret))),
        Event::Delete(_) => Some(Seen::Missing),
    }
}

/// Watches the Secret named `name`; by a field selector on its name, the one way RBAC with
/// `resourceNames` lets a list or watch through.
fn watch_secret(api: Api<Secret>, name: &str) -> watch::Receiver<Seen> {
    let (seen, receiver) = watch::channel(Seen::Unlisted);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut relist = None;
    tokio::spawn(watches::retrying(api, config).for_each(move |event| {
        if let Some(now) = event.ok().and_then(|event| observe(event, &mut relist)) {
            seen.send_replace(now);
        }
        std::future::ready(())
    }));
    receiver
}

/// Why a pass stopped before its end.
#[derive(Debug, thiserror::Error)]
enum KeepError {
    #[error("{action} {object}: {source}")]
    Api { action: &'static str, object: String, source: kube::Error },
    #[error("issuing a certificate: {0}")]
    Issue(#[from] rcgen::Error),
}

impl KeepError {
    /// Another writer changed the object since it was read: an update's 409, or a JSON patch
    /// whose resourceVersion test failed (422).
    fn is_conflict(&self) -> bool {
        matches!(self, KeepError::Api { source: kube::Error::Api(status), .. } if status.is_conflict() || status.code == 422)
    }
}

/// One of our webhook configurations as last read, with the API that writes it.
struct Configuration {
    api: Api<DynamicObject>,
    object: DynamicObject,
}

impl Configuration {
    fn describe(&self) -> String {
        format!("{} {}", self.object.types.as_ref().map_or("", |t| t.kind.as_str()), self.object.name_any())
    }
}

/// What the keeper gives the webhook server.
pub struct Kept {
    /// Each valid pair the Secret holds; `None` until there is one.
    pub pairs: watch::Receiver<Option<Arc<ServingPair>>>,
    /// Whether each of our webhook configurations trusts the pair in `pairs`, as last looked.
    pub trusted: Arc<AtomicBool>,
}

/// Keeps the certificate in `source` and in the webhook configurations' `caBundle`, renewing it
/// while `leading`; on every replica, publishes each pair to serve and whether it is trusted.
pub fn keep(client: Client, source: SecretSource, leading: watch::Receiver<bool>) -> Kept {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &source.namespace);
    let seen = watch_secret(secrets.clone(), &source.name);
    let (pairs, published) = watch::channel(None);
    let trusted = Arc::new(AtomicBool::new(false));
    let keeper =
        Keeper { secrets, source, configurations: configuration_apis(&client), pairs, trusted: trusted.clone() };
    tokio::spawn(keeper.run(seen, leading));
    Kept { pairs: published, trusted }
}

/// Our webhook configurations, by name, with the API of each one's kind.
fn configuration_apis(client: &Client) -> Vec<(Api<DynamicObject>, &'static str)> {
    let mutating = ApiResource::erase::<MutatingWebhookConfiguration>(&());
    let validating = ApiResource::erase::<ValidatingWebhookConfiguration>(&());
    [
        (&mutating, MUTATING_WEBHOOK),
        (&validating, VALIDATING_WEBHOOK),
        (&mutating, CONFIGURED_MUTATING_WEBHOOK),
        (&validating, CONFIGURED_VALIDATING_WEBHOOK),
    ]
    .into_iter()
    .map(|(resource, name)| (Api::all_with(client.clone(), resource), name))
    .collect()
}

struct Keeper {
    secrets: Api<Secret>,
    source: SecretSource,
    configurations: Vec<(Api<DynamicObject>, &'static str)>,
    pairs: watch::Sender<Option<Arc<ServingPair>>>,
    trusted: Arc<AtomicBool>,
}

impl Keeper {
    /// A pass on every change of the Secret or of leadership, when a renewal falls due, and
    /// every [`CHECK_EVERY`].
    async fn run(self, mut seen: watch::Receiver<Seen>, mut leading: watch::Receiver<bool>) {
        loop {
            let secret = seen.borrow_and_update().clone();
            let leads = *leading.borrow_and_update();
            let wait = match self.pass(&secret, leads, OffsetDateTime::now_utc()).await {
                Ok(wait) => wait,
                // The Secret's watch brings what the other writer wrote, and with it the next pass.
                Err(error) if error.is_conflict() => {
                    info!(%error, "another writer was first; looking again");
                    RETRY
                }
                Err(error) => {
                    warn!(%error, "keeping the webhook certificate; retrying");
                    RETRY
                }
            };
            // A closed channel (a replica alone leads for good) disables its branch.
            tokio::select! {
                Ok(()) = seen.changed() => {}
                Ok(()) = leading.changed() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Publishes the Secret's pair, renews it or repairs the bundles if this replica leads, and
    /// says whether the API server trusts the pair served. Returns how long to wait at most.
    async fn pass(&self, seen: &Seen, leads: bool, now: OffsetDateTime) -> Result<Duration, KeepError> {
        let secret_ref = format!("{}/{}", self.source.namespace, self.source.name);
        let by_cert_manager = self.source.renewal == Renewal::ByCertManager;
        let secret = match seen {
            Seen::Unlisted => return Ok(CHECK_EVERY),
            Seen::Missing if by_cert_manager => {
                info!(secret = %secret_ref, "waiting for cert-manager to issue the webhook certificate into its Secret");
                return Ok(CHECK_EVERY);
            }
            Seen::Missing => {
                warn!(
                    secret = %secret_ref,
                    "the install is incomplete: the Secret for the webhook certificate is missing, and the \
                     controller may not create it (`kubectl kueue-ext install` does); waiting for it"
                );
                return Ok(CHECK_EVERY);
            }
            Seen::Found(secret) => secret,
        };
        // Under cert-manager, the leader writes no more than the other replicas: nothing.
        let renews = match self.source.renewal {
            Renewal::ByLeader { validity } if leads => Some(validity),
            _ => None,
        };
        let read = if by_cert_manager { ServingPair::from_cert_manager_secret } else { ServingPair::from_secret };
        let stored = read(secret, now);
        if let Ok(pair) = &stored {
            self.publish(pair);
        }
        let mut configurations = self.read_configurations().await?;
        let wait = match stored {
            Ok(pair) if !pair.renewal_due(now) => {
                if renews.is_some() {
                    self.repair(&mut configurations, &pair, now).await?;
                }
                CHECK_EVERY.min((pair.renewal_at() - now).try_into().unwrap_or_default())
            }
            stale => {
                let why = stale.map_or_else(|why| why, |pair| format!("due since {}", rfc3339(pair.renewal_at())));
                match renews {
                    Some(validity) => self.renew(secret, &mut configurations, validity, &why, now).await?,
                    None if by_cert_manager => info!(secret = %secret_ref, reason = why, "waiting for cert-manager"),
                    None => {}
                }
                CHECK_EVERY
            }
        };
        let served = self.pairs.borrow().clone();
        let trusted = served.is_some_and(|pair| configurations.iter().all(|c| trusts(&c.object, &pair, now)));
        self.trusted.store(trusted, Ordering::Relaxed);
        Ok(wait)
    }

    /// Hands `pair` to the server unless it serves it already.
    fn publish(&self, pair: &ServingPair) {
        self.pairs.send_if_modified(|served| {
            let new = served.as_deref() != Some(pair);
            if new {
                *served = Some(Arc::new(pair.clone()));
            }
            new
        });
    }

    /// Those of our webhook configurations that exist: the configured kinds' appear only with
    /// an integrations file.
    async fn read_configurations(&self) -> Result<Vec<Configuration>, KeepError> {
        let mut found = Vec::new();
        for (api, name) in &self.configurations {
            let read = api.get_opt(name).await;
            let read = read.map_err(|source| KeepError::Api { action: "reading", object: name.to_string(), source })?;
            found.extend(read.map(|object| Configuration { api: api.clone(), object }));
        }
        Ok(found)
    }

    /// Sets the bundle of every configuration that does not trust `pair` to the Secret's own:
    /// an install applied again writes configurations without one.
    async fn repair(
        &self,
        configurations: &mut [Configuration],
        pair: &ServingPair,
        now: OffsetDateTime,
    ) -> Result<(), KeepError> {
        for configuration in configurations.iter_mut().filter(|c| !trusts(&c.object, pair, now)) {
            info!(configuration = %configuration.describe(), "its caBundle does not trust the served certificate; restoring it");
            set_bundle(configuration, &pair.ca_bundle).await?;
        }
        Ok(())
    }

    /// A new CA and pair: the bundles first, then the Secret, so the API server trusts the new
    /// pair before any replica serves it, and still trusts the current one until they do.
    async fn renew(
        &self,
        secret: &Secret,
        configurations: &mut [Configuration],
        validity: Duration,
        why: &str,
        now: OffsetDateTime,
    ) -> Result<(), KeepError> {
        let current_bundle = text(secret, CA);
        let fresh = ServingPair::issue(&webhook_dns_names(), validity, now, current_bundle.as_deref())?;
        for configuration in configurations.iter_mut() {
            set_bundle(configuration, &fresh.ca_bundle).await?;
        }
        let name = &self.source.name;
        let written = fresh.written_into(secret.clone());
        self.secrets.replace(name, &post_params(), &written).await.map_err(|source| KeepError::Api {
            action: "updating",
            object: format!("Secret {}/{name}", self.source.namespace),
            source,
        })?;
        info!(not_after = %rfc3339(fresh.not_after), reason = why, "renewed the webhook serving certificate");
        Ok(())
    }
}

/// Sets every webhook's `caBundle` of `configuration` to `bundle`, keeping what the API server
/// answers as the configuration read.
async fn set_bundle(configuration: &mut Configuration, bundle: &str) -> Result<(), KeepError> {
    let Some(patch) = bundle_patch(&configuration.object, bundle) else { return Ok(()) };
    let name = configuration.object.name_any();
    let patched = configuration.api.patch(&name, &patch_params(), &Patch::Json::<()>(patch)).await;
    let describe = configuration.describe();
    configuration.object =
        patched.map_err(|source| KeepError::Api { action: "patching the caBundle of", object: describe, source })?;
    Ok(())
}

#[cfg(test)]
#[path = "certs_tests.rs"]
mod tests;
