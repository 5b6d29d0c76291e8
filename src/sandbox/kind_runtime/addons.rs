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
use super::{requests, wait};
use crate::kube_util;
use crate::sandbox::addons::{self as sandbox_addons, BuiltAddon, Programs, Release, program_name};
use crate::sandbox::progress::Progress;
use crate::sandbox::toolchain::Toolchain;

/// Pulling nothing but issuing and injecting its own certificate takes a while on a cold node.
const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// An add-on ready for kind clusters: the image archive to load and the documents to apply.
#[derive(Clone, Debug)]
pub struct KindAddon {
    pub built: BuiltAddon,
    pub image: String,
    pub archive: PathBuf,
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
    if let Some(flag) = spec.init_container_image_flag {
        add_argument(&mut docs, spec.deployment, &format!("{flag}={}", recipes::BUSYBOX));
    }
    Ok(KindAddon { built: built.clone(), image, archive, docs })
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
