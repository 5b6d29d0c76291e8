//! Install manifests rendered from a pinned module's `config/default` (through the toolchain's
//! kubectl kustomize), as a release file is made, with a local image: Kueue's, and the add-ons'.

use std::path::Path;

use serde_json::{Value, json};
use tokio::process::Command;

use super::{LocalImageError, recipes};
use crate::sandbox::toolchain::{self, Toolchain};

/// Renders the manifests into `to`.
pub async fn render(toolchain: &Toolchain, to: &Path, log: &Path) -> Result<(), LocalImageError> {
    let module = toolchain::module_dir(&toolchain.src_dir(), "sigs.k8s.io/kueue", log).await?;
    let docs = release(toolchain, &module.join("config/default"), &recipes::kueue_image(), log).await?;
    let mut rendered = String::new();
    for doc in &docs {
        rendered.push_str("---\n");
        let text = serde_saphyr::to_string(doc).map_err(|e| LocalImageError::Step {
            step: "writing Kueue's manifests".into(),
            log: log.to_path_buf(),
            tail: e.to_string(),
        })?;
        rendered.push_str(&text);
    }
    std::fs::write(to, rendered).map_err(LocalImageError::io(to))
}

/// A project's release install, as its `config/default` kustomization makes it (through the
/// toolchain's kubectl), with its Deployments running the local `image`.
pub async fn release(
    toolchain: &Toolchain,
    config: &Path,
    image: &str,
    log: &Path,
) -> Result<Vec<Value>, LocalImageError> {
    let output =
        Command::new(toolchain.bin("kubectl")).arg("kustomize").arg(config).output().await.map_err(|source| {
            LocalImageError::Missing {
                program: toolchain.bin("kubectl").display().to_string(),
                hint: "the toolchain is damaged: run `kubectl kueue-ext toolchain install`",
                source,
            }
        })?;
    let failed = |tail: String| LocalImageError::Step {
        step: format!("kubectl kustomize {}", config.display()),
        log: log.to_path_buf(),
        tail,
    };
    if !output.status.success() {
        return Err(failed(String::from_utf8_lossy(&output.stderr).into_owned()));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| failed(e.to_string()))?;
    Ok(with_local_image(docs.into_iter().filter(Value::is_object).collect(), image))
}

/// Points every container of the Deployments at the local image, which is never pulled.
fn with_local_image(mut docs: Vec<Value>, image: &str) -> Vec<Value> {
    for doc in docs.iter_mut().filter(|d| d["kind"] == "Deployment") {
        if let Some(containers) = doc["spec"]["template"]["spec"]["containers"].as_array_mut() {
            for container in containers {
                container["image"] = json!(image);
                container["imagePullPolicy"] = json!("IfNotPresent");
            }
        }
    }
    docs
}

/// A release kept as plain manifests (ko's input): every `.yaml` file under `dir`, sorted and
/// recursively, but those whose name is in `skip`.
pub fn files(dir: &Path, skip: &[&str]) -> Result<Vec<Value>, LocalImageError> {
    let mut paths = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).map_err(LocalImageError::io(&at))? {
            let path = entry.map_err(LocalImageError::io(&at))?.path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if skip.contains(&name.as_ref()) {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if name.ends_with(".yaml") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    let mut docs = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(LocalImageError::io(&path))?;
        let parsed: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| LocalImageError::Step {
            step: format!("reading {}", path.display()),
            log: path.clone(),
            tail: e.to_string(),
        })?;
        docs.extend(parsed.into_iter().filter(Value::is_object));
    }
    Ok(docs)
}

const KO: &str = "ko://";

/// Resolves a ko release's `ko://<package>` references to the local `image`, which holds every
/// program at `/ko-app/<name>`: a container of one runs it (unless it names its command), and an
/// argument that names one (an image for the pods the add-on makes) names the image.
pub fn resolve_ko(docs: &mut [Value], image: &str) {
    for deployment in docs.iter_mut().filter(|d| d["kind"] == "Deployment") {
        for container in deployment["spec"]["template"]["spec"]["containers"].as_array_mut().into_iter().flatten() {
            if let Some(package) = container["image"].as_str().and_then(|i| i.strip_prefix(KO)) {
                if container.get("command").is_none() {
                    let program = package.rsplit('/').next().unwrap_or(package);
                    container["command"] = json!([format!("/ko-app/{program}")]);
                }
                container["image"] = json!(image);
                container["imagePullPolicy"] = json!("IfNotPresent");
            }
            for arg in container.get_mut("args").and_then(Value::as_array_mut).into_iter().flatten() {
                if arg.as_str().is_some_and(|a| a.starts_with(KO)) {
                    *arg = json!(image);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kueue_runs_the_local_image_without_pulling() {
        let docs = vec![
            json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
                {"name": "manager", "image": "controller:latest", "imagePullPolicy": "Always"}]}}}}),
            json!({"kind": "Service", "spec": {}}),
        ];
        let docs = with_local_image(docs, &recipes::kueue_image());
        let manager = &docs[0]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(manager["image"], recipes::kueue_image());
        assert_eq!(manager["imagePullPolicy"], "IfNotPresent");
        assert_eq!(docs[1], json!({"kind": "Service", "spec": {}}));
    }

    #[test]
    fn ko_references_run_the_local_image_s_programs() {
        let mut docs = vec![json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
            {"name": "controller", "image": "ko://example.com/pipeline/cmd/controller",
             "args": ["-entrypoint-image", "ko://example.com/pipeline/cmd/entrypoint", "-threads", "2"]},
            {"name": "proxy", "image": "registry.example/proxy:1"}]}}}})];
        resolve_ko(&mut docs, "kueue-ext.local/pipeline:v1");
        let containers = &docs[0]["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["image"], "kueue-ext.local/pipeline:v1");
        assert_eq!(containers[0]["command"], json!(["/ko-app/controller"]));
        assert_eq!(containers[0]["args"], json!(["-entrypoint-image", "kueue-ext.local/pipeline:v1", "-threads", "2"]));
        assert_eq!(containers[1], json!({"name": "proxy", "image": "registry.example/proxy:1"}), "not ko's");
    }

    #[test]
    fn a_plain_release_is_every_yaml_file_but_the_skipped_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("100-namespace/ns.yaml", "kind: Namespace\n");
        write("200-role.yaml", "kind: Role\n---\nkind: RoleBinding\n");
        write("resolvers/resolvers.yaml", "kind: Deployment\n");
        write("dummy.go", "package config\n");
        let kinds: Vec<Value> =
            files(dir.path(), &["resolvers"]).unwrap().into_iter().map(|d| d["kind"].clone()).collect();
        assert_eq!(kinds, [json!("Namespace"), json!("Role"), json!("RoleBinding")]);
    }
}
