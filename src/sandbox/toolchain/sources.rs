//! The Go wrapper module, embedded so an installed plugin can build its toolchain without the
//! source tree.

pub const GO_MOD: &str = include_str!("../../../hack/toolchain/go.mod");
pub const GO_SUM: &str = include_str!("../../../hack/toolchain/go.sum");
const KUBE_MAIN: &str = include_str!("../../../hack/toolchain/cmd/kube/main.go");
const ETCD_MAIN: &str = include_str!("../../../hack/toolchain/cmd/etcd/main.go");

/// Files of the wrapper module, relative to its root.
pub const FILES: [(&str, &str); 4] =
    [("go.mod", GO_MOD), ("go.sum", GO_SUM), ("cmd/kube/main.go", KUBE_MAIN), ("cmd/etcd/main.go", ETCD_MAIN)];

/// Packages built, in the order `go build` receives them.
pub const PACKAGES: [&str; 4] =
    ["./cmd/kube", "./cmd/etcd", "sigs.k8s.io/kwok/cmd/kwok", "sigs.k8s.io/kueue/cmd/kueue"];

/// Names that run the combined Kubernetes binary through argv[0].
pub const KUBE_COMPONENTS: [&str; 4] = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"];
