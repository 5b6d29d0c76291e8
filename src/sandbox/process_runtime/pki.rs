//! A cluster's own PKI, made with rcgen: one CA, a serving certificate for loopback (also the
//! client certificate between the apiserver and etcd), the admin client certificate and the
//! ServiceAccount token signing key.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use time::{Duration, OffsetDateTime};

use crate::sandbox::fsutil::write_private;

/// DNS names the serving certificate answers to, besides loopback addresses: the in-cluster
/// names of the apiserver, so kubeconfigs with either form verify.
const SERVING_DNS_NAMES: [&str; 5] =
    ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"];

/// PEM files of one cluster.
pub struct Pki {
    pub ca_cert: String,
    pub ca_key: String,
    pub serving_cert: String,
    pub serving_key: String,
    pub admin_cert: String,
    pub admin_key: String,
    pub service_account_key: String,
    pub service_account_pub: String,
}

/// A serving certificate for an in-cluster Service and the CA the API server must trust.
pub struct ServiceCertificate {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// Where [`Pki::write`] put each file.
#[derive(Clone, Debug)]
pub struct PkiPaths {
    pub ca_cert: PathBuf,
    pub ca_key: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub admin_cert: PathBuf,
    pub admin_key: PathBuf,
    pub service_account_key: PathBuf,
    pub service_account_pub: PathBuf,
}

impl PkiPaths {
    /// Copies the serving pair into `dir` as `tls.crt` and `tls.key`, the names
    /// controller-runtime and this project's webhook server read.
    pub fn copy_serving_pair(&self, dir: &Path) -> std::io::Result<()> {
        for (from, name) in [(&self.serving_cert, "tls.crt"), (&self.serving_key, "tls.key")] {
            write_private(&dir.join(name), &std::fs::read(from)?)?;
        }
        Ok(())
    }

    pub fn in_dir(dir: &Path) -> Self {
        PkiPaths {
            ca_cert: dir.join("ca.crt"),
            ca_key: dir.join("ca.key"),
            serving_cert: dir.join("serving.crt"),
            serving_key: dir.join("serving.key"),
            admin_cert: dir.join("admin.crt"),
            admin_key: dir.join("admin.key"),
            service_account_key: dir.join("sa.key"),
            service_account_pub: dir.join("sa.pub"),
        }
    }
}

fn subject(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    if let Some(org) = organization {
        name.push(DnType::OrganizationName, org);
    }
    name
}

fn validity(params: &mut CertificateParams) {
    let now = OffsetDateTime::now_utc();
    // Backdated a little so a clock a few minutes off does not reject a fresh sandbox.
    params.not_before = now - Duration::hours(1);
    params.not_after = now + Duration::days(365);
}

impl Pki {
    /// Generates a fresh PKI for the cluster `cluster`.
    pub fn generate(cluster: &str) -> Result<Pki, rcgen::Error> {
        let mut ca_params = CertificateParams::default();
        ca_params.distinguished_name = subject(&format!("kueue-ext-{cluster}-ca"), None);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        validity(&mut ca_params);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;

        let mut serving = CertificateParams::default();
        serving.distinguished_name = subject(&format!("kueue-ext-{cluster}"), None);
        serving.subject_alt_names = vec![
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        ];
        for name in SERVING_DNS_NAMES {
            serving.subject_alt_names.push(SanType::DnsName(name.try_into()?));
        }
        serving.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        validity(&mut serving);
        let serving_key = KeyPair::generate()?;
        let serving_cert = serving.signed_by(&serving_key, &ca)?;

        let mut admin = CertificateParams::default();
        admin.distinguished_name = subject("kueue-ext-admin", Some("system:masters"));
        admin.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        validity(&mut admin);
        let admin_key = KeyPair::generate()?;
        let admin_cert = admin.signed_by(&admin_key, &ca)?;

        let service_account = KeyPair::generate()?;
        Ok(Pki {
            ca_cert: ca.pem(),
            ca_key: ca.key().serialize_pem(),
            serving_cert: serving_cert.pem(),
            serving_key: serving_key.serialize_pem(),
            admin_cert: admin_cert.pem(),
            admin_key: admin_key.serialize_pem(),
            service_account_key: service_account.serialize_pem(),
            service_account_pub: service_account.public_key_pem(),
        })
    }

    /// A CA and a serving certificate it signed for `dns_names` (an in-cluster Service).
    pub fn service_certificate(common_name: &str, dns_names: &[String]) -> Result<ServiceCertificate, rcgen::Error> {
        let mut ca_params = CertificateParams::default();
        ca_params.distinguished_name = subject(&format!("{common_name}-ca"), None);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        validity(&mut ca_params);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
        let mut serving = CertificateParams::default();
        serving.distinguished_name = subject(common_name, None);
        for name in dns_names {
            serving.subject_alt_names.push(SanType::DnsName(name.as_str().try_into()?));
        }
        serving.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        validity(&mut serving);
        let key = KeyPair::generate()?;
        let cert = serving.signed_by(&key, &ca)?;
        Ok(ServiceCertificate { ca_pem: ca.pem(), cert_pem: cert.pem(), key_pem: key.serialize_pem() })
    }

    /// Writes every file into `dir`; private keys get mode 0600.
    pub fn write(&self, dir: &Path) -> std::io::Result<PkiPaths> {
        std::fs::create_dir_all(dir)?;
        let paths = PkiPaths::in_dir(dir);
        for (path, pem) in [
            (&paths.ca_cert, &self.ca_cert),
            (&paths.ca_key, &self.ca_key),
            (&paths.serving_cert, &self.serving_cert),
            (&paths.serving_key, &self.serving_key),
            (&paths.admin_cert, &self.admin_cert),
            (&paths.admin_key, &self.admin_key),
            (&paths.service_account_key, &self.service_account_key),
            (&paths.service_account_pub, &self.service_account_pub),
        ] {
            write_private(path, pem.as_bytes())?;
        }
        Ok(paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn generates_pem_for_every_file() {
        let pki = Pki::generate("manager").unwrap();
        assert!(pki.ca_cert.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(pki.serving_key.contains("PRIVATE KEY"));
        assert!(pki.service_account_pub.starts_with("-----BEGIN PUBLIC KEY-----"));
        assert_ne!(pki.admin_key, pki.serving_key);
    }

    #[test]
    fn service_certificate_is_signed_for_the_service_names() {
        let names = vec!["svc".to_string(), "svc.ns.svc".to_string()];
        let cert = Pki::service_certificate("svc", &names).unwrap();
        assert!(cert.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(cert.key_pem.contains("PRIVATE KEY"));
        assert_ne!(cert.ca_pem, cert.cert_pem);
    }

    #[test]
    fn keys_are_written_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Pki::generate("w").unwrap().write(dir.path()).unwrap();
        for key in [&paths.ca_key, &paths.serving_key, &paths.admin_key, &paths.service_account_key] {
            let mode = std::fs::metadata(key).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", key.display());
        }
    }
}
