//! Building an add-on once per toolchain: its main package with the toolchain's Go module (which
//! requires the add-on's module through Kueue) or, for an add-on whose code does not compile
//! against Kueue's dependencies, with its own; and the module's manifests copied beside it.
//!
//! One cache entry (`<toolchain>/addons/<name>-<version>/`): `bin/<name>`, the module's manifests
//! directory (`config/` or `manifests/`: its components and its release kustomization over them),
//! `build.log`, and `ready`, written last.

use std::path::PathBuf;

use tokio::process::Command;

use super::{Addon, AddonError, GoBuild, Programs};
use crate::sandbox::progress::Progress;
use crate::sandbox::toolchain::{self, Toolchain, ToolchainError, io_err};

/// An add-on's binary and manifests, ready to run.
#[derive(Clone, Debug)]
pub struct BuiltAddon {
    pub addon: Addon,
    pub program: PathBuf,
    /// The cache entry, which holds the module's manifests.
    pub entry: PathBuf,
}

impl BuiltAddon {
    /// CRDs, RBAC and webhook manifests, one directory each.
    pub fn components(&self) -> PathBuf {
        self.entry.join(self.addon.spec().components)
    }

    /// The release: its kustomization, or its directory of manifests.
    pub fn release(&self) -> PathBuf {
        self.entry.join(self.addon.spec().release.path())
    }

    /// Where the built programs are, each named as [`Programs`] says.
    pub fn programs_dir(&self) -> PathBuf {
        self.entry.join("bin")
    }
}

/// Returns each add-on built, building those not cached yet.
pub async fn ensure_built(
    toolchain: &Toolchain,
    addons: &[Addon],
    progress: &Progress,
) -> Result<Vec<BuiltAddon>, AddonError> {
    let mut built = Vec::new();
    for &addon in addons {
        let fail = |source| AddonError::Build { addon: addon.name(), source };
        built.push(ensure_one(toolchain, addon, progress).await.map_err(fail)?);
    }
    Ok(built)
}

async fn ensure_one(toolchain: &Toolchain, addon: Addon, progress: &Progress) -> Result<BuiltAddon, ToolchainError> {
    let spec = addon.spec();
    let root = toolchain.addons_dir().join(format!("{}-{}", spec.name, spec.version));
    let program = match spec.programs {
        Programs::Manager(_) => spec.name,
        Programs::Ko(packages) => program_name(packages[0]),
    };
    let built = BuiltAddon { addon, program: root.join("bin").join(program), entry: root.clone() };
    std::fs::create_dir_all(&root).map_err(io_err(&root))?;
    let _lock = toolchain::lock(&root).await?;
    let ready = root.join("ready");
    if ready.exists() && built.program.exists() && built.release().exists() {
        return Ok(built);
    }
    let log = root.join("build.log");
    let step = progress.step(format!("building add-on {} {} from its Go module", spec.name, spec.version));
    let staging = root.join("bin.partial");
    toolchain::remove_any(&staging)?;
    let (module, workdir) = match spec.build {
        // The module's files at the version the toolchain's go.sum pins.
        GoBuild::WithKueue => {
            (toolchain::module_dir(&toolchain.src_dir(), spec.module, &log).await?, toolchain.src_dir())
        }
        GoBuild::OwnModule => {
            let module = toolchain::downloaded_module(spec.module, spec.version, &root, &log).await?;
            (module.clone(), module)
        }
    };
    let mut command = Command::new("go");
    command.current_dir(workdir).env("CGO_ENABLED", "0").arg("build");
    if spec.build == GoBuild::OwnModule {
        // Its go.mod, not a vendor directory the module's zip holds only the list of.
        command.arg("-mod=readonly");
    }
    command.args(["-trimpath", "-tags", toolchain::BUILD_TAGS, "-ldflags", &ldflags(addon), "-o"]);
    match spec.programs {
        Programs::Manager(_) => command.arg(staging.join(spec.name)),
        Programs::Ko(_) => command.arg(format!("{}/", staging.display())),
    };
    let packages = spec.programs.packages();
    command.args(&packages);
    toolchain::run_logged(command, &format!("go build {}", packages.join(" ")), &log).await?;
    if spec.build == GoBuild::WithKueue {
        // Built in its own module, the add-on is the main module, whose build info has no version.
        toolchain::check_module_version(&staging.join(spec.name), spec.module, spec.version, &log).await?;
    }
    let manifests = spec.manifests_dir();
    toolchain::copy_tree(&module.join(manifests), &root.join(manifests))?;
    let bin = root.join("bin");
    toolchain::remove_any(&bin)?;
    std::fs::rename(&staging, &bin).map_err(io_err(&bin))?;
    std::fs::write(&ready, spec.version).map_err(io_err(&ready))?;
    step.done();
    Ok(built)
}

/// A main package's program name, as `go build` names it: the last element of its path.
pub fn program_name(package: &str) -> &str {
    package.rsplit('/').next().unwrap_or(package)
}

fn ldflags(addon: Addon) -> String {
    let spec = addon.spec();
    match spec.version_variable {
        Some(variable) => format!("-s -w -X {variable}={}", spec.version),
        None => "-s -w".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_named_after_its_package_as_go_build_names_it() {
        assert_eq!(program_name("./cmd/controller"), "controller");
        assert_eq!(program_name("sigs.k8s.io/jobset"), "jobset");
    }

    #[test]
    fn the_release_version_is_stamped_where_the_binary_reads_it() {
        assert_eq!(
            ldflags(Addon::Jobset),
            format!("-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion={}", toolchain::versions::JOBSET)
        );
    }
}
