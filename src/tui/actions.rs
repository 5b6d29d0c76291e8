//! What `s` and ctrl-d do to a cluster: patch `spec.suspend`, delete the job. Each returns the
//! sentence the footer shows, success or failure.

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::json;

use super::app::Command;
use super::model::JobKey;

fn api(client: Client, key: &JobKey) -> Api<DynamicObject> {
    Api::namespaced_with(client, &key.namespace, &key.kind.api_resource())
}

pub async fn execute(client: Client, command: Command) -> String {
    match command {
        Command::SetSuspend { key, suspend } => {
            let patch = Patch::Merge(json!({"spec": {"suspend": suspend}}));
            let verb = if suspend { "suspended" } else { "resumed" };
            match api(client, &key).patch(&key.name, &PatchParams::default(), &patch).await {
                Ok(_) => format!("{key} {verb} on {}", key.cluster),
                Err(e) => format!("cannot set spec.suspend={suspend} on {key}: {e}"),
            }
        }
        Command::Delete(key) => match api(client, &key).delete(&key.name, &DeleteParams::background()).await {
            Ok(_) => format!("{key} deleted on {}", key.cluster),
            Err(e) => format!("cannot delete {key}: {e}"),
        },
    }
}
