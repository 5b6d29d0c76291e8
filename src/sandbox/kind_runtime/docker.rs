//! The Docker Engine API behind a trait: bollard on the local socket in real use, a fake in
//! tests (there is no daemon on the build machines).

use std::future::Future;
use std::path::Path;

use bollard::query_parameters::{
    BuildImageOptionsBuilder, CreateImageOptionsBuilder, ListContainersOptionsBuilder, RemoveImageOptionsBuilder,
    TagImageOptionsBuilder,
};
use futures::StreamExt;
use tokio::io::AsyncWriteExt;

use super::error::KindError;

/// The daemon that answered.
#[derive(Clone, Debug, PartialEq)]
pub struct DockerInfo {
    pub host: String,
    pub version: String,
}

/// One node container of a kind cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeContainer {
    pub name: String,
    pub running: bool,
    /// Its address on kind's Docker network, where other clusters reach its API server.
    pub address: Option<String>,
}

/// Where bollard connects when `$DOCKER_HOST` is unset.
const DEFAULT_HOST: &str = "unix:///var/run/docker.sock";

/// The Docker network kind puts every cluster's nodes on.
/// The Docker network kind puts every cluster's nodes on, creating it with the first cluster.
pub const KIND_NETWORK: &str = "kind";

/// Label kind puts on every node container of a cluster.
pub const KIND_CLUSTER_LABEL: &str = "io.x-k8s.kind.cluster";

pub trait Docker {
    /// Pings the daemon and reads its version: `DockerMissing` when there is no daemon socket,
    /// `DockerNotRunning` when one exists but nothing answers.
    fn ping(&self) -> impl Future<Output = Result<DockerInfo, KindError>>;
    /// Builds `tag` from a tar build context holding a `Dockerfile`.
    fn build_image(&self, tag: &str, context: Vec<u8>) -> impl Future<Output = Result<(), KindError>>;
    /// Builds `tag` from a tar build context file (contexts of large binaries and archives).
    fn build_image_from_file(&self, tag: &str, context: &Path) -> impl Future<Output = Result<(), KindError>>;
    /// Writes the images as one `docker save` archive to `to`.
    fn save_images(&self, tags: &[String], to: &Path) -> impl Future<Output = Result<(), KindError>>;
    /// Makes the image `tag` of a root filesystem tar (`docker import`).
    fn import_rootfs(&self, tag: &str, archive: &Path) -> impl Future<Output = Result<(), KindError>>;
    /// Gives the image `from` the name `to` as well.
    fn tag_image(&self, from: &str, to: &str) -> impl Future<Output = Result<(), KindError>>;
    /// Removes the name `tag` (and the image, when no other name holds it).
    fn remove_image(&self, tag: &str) -> impl Future<Output = Result<(), KindError>>;
    /// Whether the daemon has an image of that name.
    fn has_image(&self, tag: &str) -> impl Future<Output = Result<bool, KindError>>;
    /// Whether the daemon has a network of that name.
    fn has_network(&self, name: &str) -> impl Future<Output = Result<bool, KindError>>;
    /// Removes the network; `false` when containers still use it (it is then left as it is).
    fn remove_network(&self, name: &str) -> impl Future<Output = Result<bool, KindError>>;
    /// The node containers of a kind cluster.
    fn cluster_nodes(&self, cluster: &str) -> impl Future<Output = Result<Vec<NodeContainer>, KindError>>;
    /// The host pid of a running container's first process; `None` when it does not run.
    fn container_pid(&self, name: &str) -> impl Future<Output = Result<Option<u32>, KindError>>;
}

/// bollard on `$DOCKER_HOST` or the default socket.
pub struct BollardDocker {
    host: String,
    connection: Result<bollard::Docker, bollard::errors::Error>,
}

impl BollardDocker {
    pub fn connect() -> Self {
        let host = std::env::var("DOCKER_HOST").unwrap_or_else(|_| DEFAULT_HOST.to_string());
        BollardDocker { connection: bollard::Docker::connect_with_defaults(), host }
    }

    fn docker(&self) -> Result<&bollard::Docker, KindError> {
        self.connection
            .as_ref()
            .map_err(|e| KindError::DockerMissing { host: self.host.clone(), detail: e.to_string() })
    }

    fn classify(&self, err: bollard::errors::Error) -> KindError {
        let host = self.host.clone();
        match err {
            bollard::errors::Error::SocketNotFoundError(path) => {
                KindError::DockerMissing { host, detail: format!("{path} does not exist") }
            }
            other => KindError::DockerNotRunning { host, detail: other.to_string() },
        }
    }
}

impl BollardDocker {
    fn build_options(tag: &str) -> bollard::query_parameters::BuildImageOptions {
        BuildImageOptionsBuilder::default().dockerfile("Dockerfile").t(tag).rm(true).build()
    }

    /// Follows a build's progress stream to its end or its first error.
    async fn finish_build(
        tag: &str,
        mut progress: impl futures::Stream<Item = Result<bollard::models::BuildInfo, bollard::errors::Error>> + Unpin,
    ) -> Result<(), KindError> {
        let failed = |detail: String| KindError::ImageBuild { image: tag.to_string(), detail };
        while let Some(item) = progress.next().await {
            let info = item.map_err(|e| failed(e.to_string()))?;
            if let Some(error) = build_failure(&info) {
                return Err(failed(error));
            }
        }
        Ok(())
    }
}

/// A file as a stream of chunks, for request bodies too large to hold in memory.
fn file_chunks(file: tokio::fs::File) -> impl futures::Stream<Item = std::io::Result<bytes::Bytes>> {
    futures::stream::try_unfold(file, |mut file| async move {
        let mut chunk = vec![0u8; 1 << 20];
        let read = tokio::io::AsyncReadExt::read(&mut file, &mut chunk).await?;
        chunk.truncate(read);
        Ok((read > 0).then(|| (bytes::Bytes::from(chunk), file)))
    })
}

/// The error a build reports in its progress stream, if any.
fn build_failure(info: &bollard::models::BuildInfo) -> Option<String> {
    info.error_detail.as_ref().map(|d| d.message.clone().unwrap_or_else(|| "the build failed".into()))
}

impl Docker for BollardDocker {
    async fn ping(&self) -> Result<DockerInfo, KindError> {
        let docker = self.docker()?;
        docker.ping().await.map_err(|e| self.classify(e))?;
        let version = docker.version().await.map_err(|e| self.classify(e))?;
        Ok(DockerInfo { host: self.host.clone(), version: version.version.unwrap_or_else(|| "unknown".into()) })
    }

    async fn build_image(&self, tag: &str, context: Vec<u8>) -> Result<(), KindError> {
        let body = bollard::body_full(bytes::Bytes::from(context));
        Self::finish_build(tag, self.docker()?.build_image(Self::build_options(tag), None, Some(body))).await
    }

    async fn build_image_from_file(&self, tag: &str, context: &Path) -> Result<(), KindError> {
        let file = tokio::fs::File::open(context).await.map_err(KindError::io(context))?;
        let body = bollard::body_try_stream(file_chunks(file));
        Self::finish_build(tag, self.docker()?.build_image(Self::build_options(tag), None, Some(body))).await
    }

    async fn save_images(&self, tags: &[String], to: &Path) -> Result<(), KindError> {
        let failed = |detail: String| KindError::ImageSave { image: tags.join(", "), path: to.to_path_buf(), detail };
        // Written under a temporary name: a half-written archive must never look complete.
        let partial = to.with_extension("partial");
        let mut file = tokio::fs::File::create(&partial).await.map_err(|e| failed(e.to_string()))?;
        let names: Vec<&str> = tags.iter().map(String::as_str).collect();
        let mut chunks = self.docker()?.export_images(&names);
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| failed(e.to_string()))?;
            file.write_all(&chunk).await.map_err(|e| failed(e.to_string()))?;
        }
        file.flush().await.map_err(|e| failed(e.to_string()))?;
        tokio::fs::rename(&partial, to).await.map_err(|e| failed(e.to_string()))
    }

    async fn import_rootfs(&self, tag: &str, archive: &Path) -> Result<(), KindError> {
        let failed = |detail: String| KindError::ImageBuild { image: tag.to_string(), detail };
        let (repo, version) = tag.rsplit_once(':').unwrap_or((tag, "latest"));
        let options = CreateImageOptionsBuilder::default().from_src("-").repo(repo).tag(version).build();
        let file = tokio::fs::File::open(archive).await.map_err(KindError::io(archive))?;
        let mut progress =
            self.docker()?.create_image(Some(options), Some(bollard::body_try_stream(file_chunks(file))), None);
        while let Some(item) = progress.next().await {
            let info = item.map_err(|e| failed(e.to_string()))?;
            if let Some(detail) = info.error_detail {
                return Err(failed(detail.message.unwrap_or_else(|| "the import failed".into())));
            }
        }
        Ok(())
    }

    async fn tag_image(&self, from: &str, to: &str) -> Result<(), KindError> {
        let (repo, version) = to.rsplit_once(':').unwrap_or((to, "latest"));
        let options = TagImageOptionsBuilder::default().repo(repo).tag(version).build();
        self.docker()?
            .tag_image(from, Some(options))
            .await
            .map_err(|e| KindError::ImageBuild { image: to.to_string(), detail: e.to_string() })
    }

    async fn remove_image(&self, tag: &str) -> Result<(), KindError> {
        let options = RemoveImageOptionsBuilder::default().build();
        match self.docker()?.remove_image(tag, Some(options), None).await {
            Ok(_) | Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(()),
            Err(e) => Err(KindError::ImageBuild { image: tag.to_string(), detail: e.to_string() }),
        }
    }

    async fn has_image(&self, tag: &str) -> Result<bool, KindError> {
        match self.docker()?.inspect_image(tag).await {
            Ok(_) => Ok(true),
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(false),
            Err(e) => Err(self.classify(e)),
        }
    }

    async fn has_network(&self, name: &str) -> Result<bool, KindError> {
        let options = bollard::query_parameters::InspectNetworkOptions::default();
        match self.docker()?.inspect_network(name, Some(options)).await {
            Ok(_) => Ok(true),
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(false),
            Err(e) => Err(self.classify(e)),
        }
    }

    async fn remove_network(&self, name: &str) -> Result<bool, KindError> {
        match self.docker()?.remove_network(name).await {
            Ok(()) | Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(true),
            // 403: endpoints are still attached (someone else's containers joined it since).
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 403, .. }) => Ok(false),
            Err(e) => Err(self.classify(e)),
        }
    }

    async fn container_pid(&self, name: &str) -> Result<Option<u32>, KindError> {
        let options = bollard::query_parameters::InspectContainerOptions::default();
        let container = self.docker()?.inspect_container(name, Some(options)).await.map_err(|e| self.classify(e))?;
        let pid = container.state.and_then(|s| s.pid).filter(|pid| *pid > 0);
        Ok(pid.and_then(|pid| u32::try_from(pid).ok()))
    }

    async fn cluster_nodes(&self, cluster: &str) -> Result<Vec<NodeContainer>, KindError> {
        let filters = std::collections::HashMap::from([("label", vec![format!("{KIND_CLUSTER_LABEL}={cluster}")])]);
        let options = ListContainersOptionsBuilder::default().all(true).filters(&filters).build();
        let containers = self.docker()?.list_containers(Some(options)).await.map_err(|e| self.classify(e))?;
        let mut nodes: Vec<NodeContainer> = containers
            .into_iter()
            .map(|c| NodeContainer {
                name: c
                    .names
                    .unwrap_or_default()
                    .first()
                    .map(|n| n.trim_start_matches('/').to_string())
                    .unwrap_or_default(),
                running: c.state.is_some_and(|s| s.to_string() == "running"),
                address: c
                    .network_settings
                    .and_then(|n| n.networks)
                    .and_then(|networks| networks.get(KIND_NETWORK).and_then(|n| n.ip_address.clone()))
                    .filter(|ip| !ip.is_empty()),
            })
            .collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(nodes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_errors_are_read_from_the_progress_stream() {
        let detail = bollard::models::BuildInfo {
            error_detail: Some(bollard::models::ErrorDetail { code: None, message: Some("no space left".into()) }),
            ..Default::default()
        };
        assert_eq!(build_failure(&detail).as_deref(), Some("no space left"));
        assert_eq!(build_failure(&bollard::models::BuildInfo::default()), None);
    }

    #[tokio::test]
    async fn a_missing_socket_is_docker_missing() {
        let docker = BollardDocker {
            host: "unix:///nonexistent/docker.sock".into(),
            connection: bollard::Docker::connect_with_unix(
                "unix:///nonexistent/docker.sock",
                5,
                bollard::API_DEFAULT_VERSION,
            ),
        };
        let err = docker.ping().await.unwrap_err();
        assert!(matches!(err, KindError::DockerMissing { .. }), "{err:?}");
        assert!(err.to_string().contains("--runtime process"), "{err}");
    }

    #[tokio::test]
    async fn a_socket_nobody_answers_on_is_docker_not_running() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docker.sock");
        // A socket file with no listener behind it: what a stopped daemon leaves.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let host = format!("unix://{}", path.display());
        let docker = BollardDocker {
            connection: bollard::Docker::connect_with_unix(&host, 5, bollard::API_DEFAULT_VERSION),
            host,
        };
        let err = docker.ping().await.unwrap_err();
        assert!(matches!(err, KindError::DockerNotRunning { .. }), "{err:?}");
        assert!(err.to_string().contains("does not answer"), "{err}");
    }
}
