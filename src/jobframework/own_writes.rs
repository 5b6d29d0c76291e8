//! What this controller last wrote to each object, as the API server answered it, kept until the
//! watch brings that version back. Under a burst the watch trails our own writes by seconds, and
//! a reconcile in between would decide again on the version from before the write: it would
//! write the same thing again (refused as a conflict) or read the object from the API server to
//! find it already done. With this it decides on what it wrote. Writes stay pinned to the
//! resourceVersion they were decided on, so a copy that someone else's write has overtaken is
//! refused, never written over; and a reconcile that decided on a stand-in runs again once the
//! stand-in has expired, so that nothing the watch brought meanwhile goes unseen.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::Resource;
use kube::runtime::reflector::ObjectRef;

/// How long a written copy stands in for the cache's: past this, its version was missed (a
/// relist lists only the newest) and the cache is as new as it gets.
pub const KEPT_FOR: Duration = Duration::from_secs(10);

pub struct OwnWrites<K: Resource<DynamicType = ()>> {
    state: Mutex<State<K>>,
}

struct State<K: Resource<DynamicType = ()>> {
    /// Our last write to each object, until the watch brings it back.
    written: HashMap<ObjectRef<K>, (Arc<K>, Instant)>,
    /// The versions the watch brought lately: the answer to a write can come after the watch
    /// has already delivered what it wrote.
    seen: HashMap<ObjectRef<K>, (Vec<String>, Instant)>,
}

impl<K: Resource<DynamicType = ()>> Default for OwnWrites<K> {
    fn default() -> Self {
        OwnWrites { state: Mutex::new(State { written: HashMap::new(), seen: HashMap::new() }) }
    }
}

/// A cached object, or what we wrote to it since.
pub struct Newest<K> {
    pub object: Arc<K>,
    /// Whether it is our write standing in for a cache that has not caught up.
    pub stand_in: bool,
}

impl<K: Resource<DynamicType = ()> + Clone> OwnWrites<K> {
    /// Records `written`, the API server's answer to a write of ours.
    pub fn wrote(&self, written: &K) {
        self.wrote_at(written, Instant::now());
    }

    /// The watch has brought `applied` (and the cache holds it).
    pub fn seen(&self, applied: &K) {
        self.seen_at(applied, Instant::now());
    }

    /// `cached`, or what we wrote to it since, while the cache has not caught up.
    pub fn newest(&self, cached: Arc<K>) -> Newest<K> {
        self.newest_at(cached, Instant::now())
    }

    /// What we wrote to `key` that the watch has not brought back: an object we created may not
    /// be in the cache at all yet.
    pub fn unseen(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        let state = self.lock();
        let (ours, at) = state.written.get(key)?;
        (at.elapsed() < KEPT_FOR).then(|| ours.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wrote_at(&self, written: &K, now: Instant) {
        let mut state = self.lock();
        let live = |at: &Instant| now.saturating_duration_since(*at) < KEPT_FOR;
        state.written.retain(|_, (_, at)| live(at));
        state.seen.retain(|_, (_, at)| live(at));
        let key = ObjectRef::from_obj(written);
        let version = written.meta().resource_version.as_ref();
        if state.seen.get(&key).is_some_and(|(versions, _)| version.is_some_and(|v| versions.contains(v))) {
            return;
        }
        state.written.insert(key, (Arc::new(written.clone()), now));
    }

    fn seen_at(&self, applied: &K, now: Instant) {
        let mut state = self.lock();
        let key = ObjectRef::from_obj(applied);
        let version = applied.meta().resource_version.clone().unwrap_or_default();
        if state.written.get(&key).is_some_and(|(ours, _)| ours.meta().resource_version.as_ref() == Some(&version)) {
            state.written.remove(&key);
        }
        let (versions, at) = state.seen.entry(key).or_insert_with(|| (Vec::new(), now));
        if now.saturating_duration_since(*at) >= KEPT_FOR {
            versions.clear();
        }
        // A few are enough: our write's answer comes right after the watch brought it.
        if versions.len() >= 8 {
            versions.remove(0);
        }
        versions.push(version);
        *at = now;
    }

    fn newest_at(&self, cached: Arc<K>, now: Instant) -> Newest<K> {
        let state = self.lock();
        match state.written.get(&ObjectRef::from_obj(cached.as_ref())) {
            Some((ours, at))
                if now.saturating_duration_since(*at) < KEPT_FOR
                    && ours.meta().uid == cached.meta().uid
                    && ours.meta().resource_version != cached.meta().resource_version =>
            {
                Newest { object: ours.clone(), stand_in: true }
            }
            _ => Newest { object: cached, stand_in: false },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn version(uid: &str, resource_version: &str, value: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("wl".into()),
                namespace: Some("ns".into()),
                uid: Some(uid.into()),
                resource_version: Some(resource_version.into()),
                ..Default::default()
            },
            data: Some([("v".to_string(), value.to_string())].into()),
            ..Default::default()
        }
    }

    fn value(newest: &Newest<ConfigMap>) -> (&str, bool) {
        (&newest.object.data.as_ref().unwrap()["v"], newest.stand_in)
    }

    #[test]
    fn our_write_stands_in_for_the_cache_until_the_watch_brings_it_back() {
        let own = OwnWrites::default();
        let before = Arc::new(version("u", "1", "before"));
        assert_eq!(value(&own.newest(before.clone())), ("before", false), "nothing written yet");
        own.wrote(&version("u", "2", "ours"));
        assert_eq!(value(&own.newest(before.clone())), ("ours", true), "the cache trails our write");
        own.seen(&before);
        assert_eq!(value(&own.newest(before.clone())), ("ours", true), "an older version seen changes nothing");
        let caught_up = Arc::new(version("u", "2", "ours, from the watch"));
        let key = ObjectRef::from_obj(caught_up.as_ref());
        assert_eq!(own.unseen(&key).map(|o| o.data.as_ref().unwrap()["v"].clone()).as_deref(), Some("ours"));
        own.seen(&caught_up);
        assert_eq!(value(&own.newest(before)), ("before", false), "seen: the cache decides again");
        assert!(own.unseen(&key).is_none());
    }

    #[test]
    fn a_write_the_watch_brought_before_its_answer_stands_in_for_nothing() {
        let own = OwnWrites::default();
        own.seen(&version("u", "2", "ours, from the watch"));
        own.seen(&version("u", "3", "theirs, from the watch"));
        own.wrote(&version("u", "2", "ours"));
        let cached = Arc::new(version("u", "3", "theirs, from the watch"));
        assert_eq!(value(&own.newest(cached)), ("theirs, from the watch", false));
    }

    #[test]
    fn a_recreated_object_or_an_old_write_is_not_stood_in_for() {
        let own = OwnWrites::default();
        let now = Instant::now();
        own.wrote_at(&version("u", "2", "ours"), now);
        let recreated = Arc::new(version("other", "7", "new object"));
        assert_eq!(value(&own.newest_at(recreated, now)), ("new object", false));
        let cached = Arc::new(version("u", "1", "cached"));
        assert_eq!(value(&own.newest_at(cached, now + KEPT_FOR)), ("cached", false), "a missed version expires");
        own.wrote_at(&version("u", "3", "later"), now + KEPT_FOR);
        assert_eq!(own.lock().written.len(), 1, "expired copies are dropped as new ones come");
    }
}
