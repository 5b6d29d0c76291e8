//! What `s` and ctrl-d do to a cluster: patch `spec.suspend`, delete the job. Each returns the
//! sentence the footer shows, success or failure.

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::json;

use super::app::Command;
use crate::jobframework::api_error;
use crate::model::JobKey;

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
                Err(e) => format!("cannot set spec.suspend={suspend} on {key}: {}", api_error::in_words(&e)),
            }
        }
        Command::Delete(key) => match api(client, &key).delete(&key.name, &DeleteParams::background()).await {
            Ok(_) => format!("{key} deleted on {}", key.cluster),
            Err(e) => format!("cannot delete {key}: {}", api_error::in_words(&e)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::registry::built_in_kind;
    use crate::test_api_server::scripted_client;

    /// The footer has one line: the API server's words, not kube's dump of its Status.
    #[tokio::test]
    async fn a_refusal_is_told_in_the_api_servers_words() {
        let key = JobKey {
            cluster: "manager".into(),
            kind: built_in_kind("ExternalJob"),
            namespace: "default".into(),
            name: "x".into(),
        };
        let (client, _) = scripted_client(|_, _| Err(409));
        let told = execute(client.clone(), Command::SetSuspend { key: key.clone(), suspend: true }).await;
        assert_eq!(told, "cannot set spec.suspend=true on ExternalJob default/x: Conflict");
        assert_eq!(execute(client, Command::Delete(key)).await, "cannot delete ExternalJob default/x: Conflict");
    }
}
