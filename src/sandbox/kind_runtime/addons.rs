//! Add-ons on kind clusters, installed as their releases install them: the module's
//! `config/default` rendered by the toolchain's kubectl, its Deployment running the add-on's
//! binary from an image built here (loaded into every node, like the controller's), its own
//! certificate management issuing its webhook certificate in the cluster.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::Client;
use serde_json::{Value, json};

use super::docker::Docker;
use super::error::{InstallError, KindError};
use super::local_images;
use super::local_images::recipes::{self, AddonPrograms};
use super::requests;
use crate::kube_util;
use crate::kube_util::wait;
use crate::sandbox::cluster_setup::addons::{self as sandbox_addons, BuiltAddon, Programs, Release, program_name};
use crate::sandbox::progress::Progress;
use crate::sandbox::toolchain::{self, Toolchain};

/// Pulling nothing but issuing and injecting its own certificate takes a while on a cold node.
const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// An add-on ready for kind clusters: the image archive to load and the documents to apply,
/// also written out for a kind cluster of the user's own (`kind load image-archive`, then
/// `kubectl apply --server-side -f`).
#[derive(Clone, Debug)]
pub struct KindAddon {
    pub built: BuiltAddon,
    pub image: String,
    pub archive: PathBuf,
    /// The release's documents as one YAML file.
    pub release: PathBuf,
    docs: Vec<Value>,
}

/// Builds the add-on's image (once per build of its binary, kept beside it) and renders its
/// release for that image.
pub async fn prepare(
    docker: &impl Docker,
    toolchain: &Toolchain,
    built: &BuiltAddon,
    progress: &Progress,
) -> Result<KindAddon, KindError> {
    let spec = built.addon.spec();
    let image = format!("{}/{}:{}", recipes::REGISTRY, spec.name, spec.version);
    let archive = built.entry.join("kind-image.tar");
    // `toolchain install --kind` may be building the same image in another process.
    let _lock = toolchain::lock(&built.entry).await.map_err(local_images::LocalImageError::from)?;
    if !is_newer(&archive, &built.program) {
        let step = progress.step(format!("add-on image {image}"));
        let programs = match spec.programs {
            Programs::Manager(_) => AddonPrograms::Manager(&built.program),
            Programs::Ko(packages) => AddonPrograms::Ko(
                packages
                    .iter()
                    .map(|package| program_name(package))
                    .map(|name| (name, built.programs_dir().join(name)))
                    .collect(),
            ),
        };
        local_images::save_addon_image(docker, &image, &programs, &archive).await?;
        step.done();
    }
    let mut docs = match spec.release {
        Release::Kustomization(_) => {
            let log = built.entry.join("render.log");
            local_images::release::release(toolchain, &built.release(), &image, &log).await
        }
        Release::Files { skip, .. } => local_images::release::files(&built.release(), skip),
    }
    .map_err(KindError::from)?;
    if let Programs::Ko(_) = spec.programs {
        local_images::release::resolve_ko(&mut docs, &image);
    }
    requests::ask_for_little_cpu(&mut docs);
    if let Some(init) = spec.init_containers {
        add_argument(&mut docs, spec.deployment, &format!("{}={}", init.image_flag, recipes::BUSYBOX));
        if let Some((flag, template)) = init.template {
            let namespace = spec.kustomization.namespace;
            let file = mount_file(&mut docs, (namespace, spec.deployment), INIT_CONTAINER_TEMPLATE, template);
            add_argument(&mut docs, spec.deployment, &format!("{flag}={file}"));
        }
    }
    let release = built.entry.join("kind-release.yaml");
    write_release(&release, &docs).map_err(local_images::LocalImageError::io(&release))?;
    Ok(KindAddon { built: built.clone(), image, archive, release, docs })
}

fn write_release(path: &Path, docs: &[Value]) -> std::io::Result<()> {
    let mut text = String::new();
    for doc in docs {
        text.push_str("---\n");
        text.push_str(&serde_saphyr::to_string(doc).map_err(std::io::Error::other)?);
    }
    std::fs::write(path, text)
}

/// Whether `file` exists and was written after `than`.
fn is_newer(file: &Path, than: &Path) -> bool {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    matches!((modified(file), modified(than)), (Some(file), Some(than)) if file >= than)
}

/// Adds `argument` to the command line of the containers of the Deployment `name`.
fn add_argument(docs: &mut [Value], name: &str, argument: &str) {
    for deployment in docs.iter_mut().filter(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == name) {
        for container in deployment["spec"]["template"]["spec"]["containers"].as_array_mut().into_iter().flatten() {
            match container["args"].as_array_mut() {
                Some(args) => args.push(argument.into()),
                None => container["args"] = json!([argument]),
            }
        }
    }
}

/// Where an add-on finds the init container template the sandbox gives it.
const INIT_CONTAINER_TEMPLATE: &str = "/etc/kueue-ext/init-container.yaml";

/// Adds a ConfigMap holding `text` beside the Deployment `name` in `namespace`, and mounts it so
/// that its containers read `text` at `path`; returns `path`.
fn mount_file<'a>(docs: &mut Vec<Value>, (namespace, name): (&str, &str), path: &'a str, text: &str) -> &'a str {
    let (dir, file) = path.rsplit_once('/').expect("an absolute path");
    let config_map = format!("{name}-kueue-ext-files");
    docs.push(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": config_map, "namespace": namespace},
        "data": {(file): text},
    }));
    for deployment in docs.iter_mut().filter(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == name) {
        let pod = &mut deployment["spec"]["template"]["spec"];
        let volume = json!({"name": "kueue-ext-files", "configMap": {"name": config_map}});
        match pod["volumes"].as_array_mut() {
            Some(volumes) => volumes.push(volume),
            None => pod["volumes"] = json!([volume]),
        }
        for container in pod["containers"].as_array_mut().into_iter().flatten() {
            let mount = json!({"name": "kueue-ext-files", "mountPath": dir, "readOnly": true});
            match container["volumeMounts"].as_array_mut() {
                Some(mounts) => mounts.push(mount),
                None => container["volumeMounts"] = json!([mount]),
            }
        }
    }
    path
}

impl KindAddon {
    fn crds(&self) -> impl Iterator<Item = &Value> {
        self.docs.iter().filter(|d| d["kind"] == "CustomResourceDefinition")
    }
}

/// The add-on's CRDs, before Kueue starts (Kueue's integration of the kind looks for them).
pub async fn install_crds(client: &Client, addon: &KindAddon) -> Result<(), InstallError> {
    let crds: Vec<Value> = addon.crds().cloned().collect();
    Ok(kube_util::apply_crds(client, &crds).await?)
}

/// Applies the rest of the release and waits until every Deployment of it is available and its
/// webhook answers (it injects its own CA into its webhook configurations first).
pub async fn install(client: &Client, addon: &KindAddon) -> Result<(), InstallError> {
    for obj in addon.docs.iter().filter(|d| d["kind"] != "CustomResourceDefinition") {
        kube_util::apply(client, obj).await?;
    }
    let spec = addon.built.addon.spec();
    for deployment in addon.docs.iter().filter(|d| d["kind"] == "Deployment") {
        let name = deployment["metadata"]["name"].as_str().unwrap_or_default();
        let namespace = deployment["metadata"]["namespace"].as_str().unwrap_or(spec.kustomization.namespace);
        let what = format!("{}'s Deployment {name} to become available", spec.name);
        wait::until(&what, READY_TIMEOUT, || wait::deployment_available(client, namespace, name)).await?;
    }
    let what = format!("{}'s webhook to answer", spec.name);
    Ok(wait::until(&what, READY_TIMEOUT, || sandbox_addons::admits(client, addon.built.addon)).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_goes_to_the_add_on_s_own_deployment_after_its_containers_own() {
        let mut docs = vec![
            json!({"kind": "Deployment", "metadata": {"name": "controller"}, "spec": {"template": {"spec": {"containers": [
                {"name": "manager", "command": ["/manager"]},
                {"name": "proxy", "args": ["--secure"]}]}}}}),
            json!({"kind": "Deployment", "metadata": {"name": "webhook"}, "spec": {"template": {"spec": {"containers": [
                {"name": "webhook"}]}}}}),
        ];
        add_argument(&mut docs, "controller", "--init-image=x");
        let containers = &docs[0]["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["args"], json!(["--init-image=x"]));
        assert_eq!(containers[1]["args"], json!(["--secure", "--init-image=x"]));
        assert_eq!(docs[1]["spec"]["template"]["spec"]["containers"][0], json!({"name": "webhook"}), "its flag only");
    }

    #[test]
    fn a_file_is_mounted_into_the_add_on_s_own_deployment_from_a_config_map() {
        let mut docs = vec![
            json!({"kind": "Deployment", "metadata": {"name": "operator"}, "spec": {"template": {"spec": {
                "volumes": [{"name": "certs", "secret": {"secretName": "c"}}],
                "containers": [{"name": "manager"}]}}}}),
            json!({"kind": "Deployment", "metadata": {"name": "other"}, "spec": {"template": {"spec": {"containers": [
                {"name": "other"}]}}}}),
        ];
        let path = mount_file(&mut docs, ("ops", "operator"), "/etc/kueue-ext/init.yaml", "- name: init\n");
        assert_eq!(path, "/etc/kueue-ext/init.yaml");
        assert_eq!(docs[2]["metadata"], json!({"name": "operator-kueue-ext-files", "namespace": "ops"}));
        assert_eq!(docs[2]["data"]["init.yaml"], "- name: init\n");
        let pod = &docs[0]["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"][1],
            json!({"name": "kueue-ext-files", "configMap": {"name": "operator-kueue-ext-files"}})
        );
        assert_eq!(pod["containers"][0]["volumeMounts"][0]["mountPath"], "/etc/kueue-ext");
        assert!(docs[1]["spec"]["template"]["spec"]["volumes"].is_null(), "its Deployment only");
    }

    #[test]
    fn the_pytorch_init_container_waits_for_the_master_by_its_name_in_the_namespace() {
        let Some((flag, template)) =
            sandbox_addons::Addon::Kubeflow.spec().init_containers.and_then(|init| init.template)
        else {
            panic!("the kubeflow add-on has an init container template");
        };
        assert_eq!(flag, "--pytorch-init-container-template-file");
        let rendered = template
            .replace("{{.MasterAddr}}", "train-master-0")
            .replace("{{.InitContainerImage}}", "busybox")
            .replace("{{.MaxTries}}", "100");
        assert!(!rendered.contains("{{"), "every field it uses is one the operator fills: {rendered}");
        let containers: Vec<Value> = serde_saphyr::from_str(&rendered).unwrap();
        let [init] = containers.as_slice() else { panic!("one container: {containers:?}") };
        assert_eq!((init["name"].as_str(), init["image"].as_str()), (Some("init-pytorch"), Some("busybox")));
        let script = init["command"][2].as_str().unwrap();
        assert!(script.contains("nslookup train-master-0.$NAMESPACE.svc.cluster.local && exit 0"), "{script}");
        assert_eq!(init["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.namespace");
    }

    #[test]
    fn an_image_is_built_again_for_a_binary_built_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let (archive, program) = (dir.path().join("kind-image.tar"), dir.path().join("jobset"));
        std::fs::write(&program, b"binary").unwrap();
        assert!(!is_newer(&archive, &program), "no image yet");
        std::fs::write(&archive, b"image").unwrap();
        let at = |secs| std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        let touch = |path: &Path, secs| {
            std::fs::File::options().write(true).open(path).unwrap().set_modified(at(secs)).unwrap()
        };
        touch(&program, 1_000);
        touch(&archive, 2_000);
        assert!(is_newer(&archive, &program));
        touch(&program, 3_000);
        assert!(!is_newer(&archive, &program), "the binary was rebuilt since");
    }
}
