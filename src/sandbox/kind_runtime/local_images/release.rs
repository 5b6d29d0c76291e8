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
}
