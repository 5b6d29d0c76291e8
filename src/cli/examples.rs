//! The EXAMPLES section of each command's `--help`, kubectl-style: a comment, then the command.
//! `tests/cli/docs.rs` runs each line's arguments through the parser, so none can drift from the flags.

pub const UP: &str = "\
Examples:
  # A manager and 2 workers, MultiKueue wired (kind where Docker answers, else local processes)
  kubectl kueue-ext up

  # One cluster that admits and runs its jobs itself, as local processes
  kubectl kueue-ext up --workers 0 --runtime process

  # JobSet's controller beside Kueue, JobSets queued by an integrations file
  kubectl kueue-ext up --addons jobset --integrations samples/addons/jobset/jobset-integration.yaml";

pub const DOWN: &str = "\
Examples:
  # Stop every process and cluster the sandbox started, and remove its state
  kubectl kueue-ext down

  # Capture it first, jobs included; `up --from snap.tgz --with-jobs` brings it back
  kubectl kueue-ext down --keep-snapshot snap.tgz";

pub const STATUS: &str = "\
Examples:
  # Each cluster and component, ready or not
  kubectl kueue-ext status

  # The same for scripts
  kubectl kueue-ext status -o json";

pub const CONTROLLER: &str = "\
Examples:
  # What the sandbox runs on each cluster (it also writes the certificates)
  kubectl kueue-ext controller --cert-dir /tmp/certs --leader-elect";

pub const MANIFESTS: &str = "\
Examples:
  # The install, as YAML
  kubectl kueue-ext manifests

  # One file per part, as manifests/ in this repository is made
  kubectl kueue-ext manifests --write manifests";

pub const INSTALL: &str = "\
Examples:
  # On the current context (a kind cluster gets this plugin's image loaded)
  kubectl kueue-ext install

  # On another cluster, with an image it can pull and kinds of an integrations file
  kubectl kueue-ext install --context prod --image registry.example.com/kueue-ext:v0.1.0 --integrations kinds.yaml

  # What would be applied, Kueue's ConfigMap change included, for GitOps
  kubectl kueue-ext install --dry-run=client -o yaml

  # Leave Kueue's Configuration to me: print the entries to add
  kubectl kueue-ext install --no-kueue-config";

pub const UNINSTALL: &str = "\
Examples:
  # Take out the controller, its webhooks and our entries in Kueue's Configuration
  kubectl kueue-ext uninstall

  # With the CRDs (and so every job of our kinds)
  kubectl kueue-ext uninstall --force --delete-crds";

pub const CONNECT: &str = "\
Examples:
  # Two kind clusters where install ran: their Workloads of cluster-queue go to kind-east
  kubectl kueue-ext connect --context kind-hub --worker-context east=kind-east

  # Two workers, one reached at an address of your choice, another ClusterQueue
  kubectl kueue-ext connect --context hub --worker-context gpu=gpu-prod --worker-context cpu=cpu-prod --worker-server gpu=https://10.0.0.5:6443 --cluster-queue team-a

  # Tokens that last a month, and more time for Kueue to connect
  kubectl kueue-ext connect --context hub --worker-context east --token-validity 720h --timeout 5m";

pub const DISCONNECT: &str = "\
Examples:
  # Take out what connect made on the manager and the worker
  kubectl kueue-ext disconnect --context kind-hub --worker-context east=kind-east";

pub const SUBMIT: &str = "\
Examples:
  # The samples' queues and jobs, then wait until every job finishes
  kubectl kueue-ext submit -f samples/ --wait

  # A directory and its subdirectories, at most 5 minutes
  kubectl kueue-ext submit -R -f samples/ --wait=5m

  # Let the API server and the webhooks check a file, storing nothing
  kubectl kueue-ext submit -f samples/job.yaml --dry-run=server

  # From standard input, to a LocalQueue of your choice
  kubectl kueue-ext submit -f - --queue user-queue";

pub const EXPLAIN: &str = "\
Examples:
  # Why the ExternalJob too-big is not running
  kubectl kueue-ext explain too-big

  # Any kind the cluster runs, by KIND/NAME
  kubectl kueue-ext explain wj/train-with-server -o yaml";

pub const WATCH: &str = "\
Examples:
  # Every job of the sandbox, live (q quits)
  kubectl kueue-ext watch

  # Your own clusters: a manager and a worker by their contexts, printed once
  kubectl kueue-ext watch --context kind-manager --worker-context worker1=kind-worker1 --once

  # The joined view for scripts
  kubectl kueue-ext watch --once -o json";

pub const CONFORMANCE: &str = "\
Examples:
  # Kueue's integration contract against ExternalJob, on the sandbox
  kubectl kueue-ext conformance --kind ExternalJob.v1alpha1.kueue-ext.dev

  # A configured kind, with its own sample job, as JSON
  kubectl kueue-ext conformance --kind Job.v1.batch --sample samples/integrations/job.yaml -o json";

pub const DOCTOR: &str = "\
Examples:
  # The sandbox's manager and workers: what is wrong, and the command that fixes it
  kubectl kueue-ext doctor

  # Clusters of one's own, as JSON
  kubectl kueue-ext doctor --context prod-manager --worker-context east=prod-east -o json";

pub const CAPTURE: &str = "\
Examples:
  # The sandbox's clusters in one archive, and what it holds and why jobs wait
  kubectl kueue-ext capture -o capture.tgz --summary

  # Clusters of one's own, one namespace's jobs only
  kubectl kueue-ext capture --context prod-manager --worker-context east=prod-east -n team-a -o capture.tgz

  # What is in an archive, and what it left out
  tar -xzOf capture.tgz capture.json";

pub const SIMULATE: &str = "\
Examples:
  # Would this job be admitted on the running sandbox, and where? Exit 1 if not
  kubectl kueue-ext simulate train.yaml

  # Against a capture, as JSON, giving Kueue two minutes
  kubectl kueue-ext simulate train.yaml eval.yaml --from capture.tgz --timeout 2m -o json";

pub const VERSION: &str = "\
Examples:
  # The plugin's build and every pinned version
  kubectl kueue-ext version

  # For a bug report or a script
  kubectl kueue-ext version -o json";
