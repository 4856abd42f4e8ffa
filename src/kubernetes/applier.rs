//! The applier thread: applies what the watches deliver to the [`Mirror`] in arrival
//! order, in batches of whatever has queued up, and turns a finished (re)list into the
//! deletion of what it did not name.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::model::decode::Object;

use super::listed::ListedKeys;
use super::{Kind, Mirror, ObjectKey, key_of, metrics};

/// A change a watcher hands the applier.
pub(super) enum Change {
    Upsert(Object),
    Other(Control),
}

/// The changes applied one at a time, between batches of upserts.
pub(super) enum Control {
    /// A (re)list of the kind begins.
    ListStarted(Kind),
    Delete(ObjectKey, Option<String>),
    /// The builder refused the object's new version: the one held goes.
    Refused(ObjectKey),
    /// The (re)list is complete: objects it did not name are gone.
    ListDone(Kind),
}

/// Changes queued between the watchers and the applier: bounds what a fast API server
/// can make preemptd hold before the cache takes it.
pub(super) const QUEUED_CHANGES: usize = 8192;
/// How often the progress of a long list is logged.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);
/// A list in progress: what it named so far.
struct Listing {
    started: Instant,
    seen: ListedKeys,
    last_progress: Instant,
}

/// The applier thread: applies changes in arrival order, batching upserts; the mirror is
/// ready once `watched` kinds have each finished a list.
pub(super) fn apply_changes(
    mut received: mpsc::Receiver<Change>,
    mirror: &dyn Mirror,
    watched: usize,
) {
    let mut listings: std::collections::HashMap<Kind, Listing> = Default::default();
    let mut listed: HashSet<Kind> = HashSet::new();
    let mut batch: Vec<Object> = Vec::new();
    let mut changes = Vec::new();
    while received.blocking_recv_many(&mut changes, QUEUED_CHANGES) > 0 {
        for change in changes.drain(..) {
            match change {
                Change::Upsert(object) => {
                    let (kind, namespace, name) = key_of(&object);
                    metrics::event(kind, "apply");
                    if let Some(listing) = listings.get_mut(&kind) {
                        listing.seen.insert(namespace, name);
                    }
                    batch.push(object);
                }
                Change::Other(control) => {
                    flush(mirror, &mut batch);
                    apply_control(control, mirror, &mut listings, &mut listed, watched);
                }
            }
        }
        flush(mirror, &mut batch);
        log_progress(&mut listings);
    }
}

fn flush(mirror: &dyn Mirror, batch: &mut Vec<Object>) {
    if !batch.is_empty() {
        mirror.upsert(std::mem::take(batch));
    }
}

fn apply_control(
    control: Control,
    mirror: &dyn Mirror,
    listings: &mut std::collections::HashMap<Kind, Listing>,
    listed: &mut HashSet<Kind>,
    watched: usize,
) {
    match control {
        Control::Delete(key, uid) => {
            metrics::event(key.kind, "delete");
            if let Some(listing) = listings.get_mut(&key.kind) {
                listing.seen.remove(&key.namespace, &key.name);
            }
            mirror.delete(&key, uid.as_deref());
        }
        Control::Refused(key) => {
            if let Some(listing) = listings.get_mut(&key.kind) {
                listing.seen.remove(&key.namespace, &key.name);
            }
            if !key.name.is_empty() {
                mirror.delete(&key, None);
            }
        }
        Control::ListStarted(kind) => {
            // A list that failed starts over: one relist however many attempts it takes.
            if listed.contains(&kind) && !listings.contains_key(&kind) {
                metrics::relist(kind);
                tracing::info!(kind = kind.name(), "relisting");
            }
            let now = Instant::now();
            listings.insert(
                kind,
                Listing {
                    started: now,
                    seen: ListedKeys::default(),
                    last_progress: now,
                },
            );
        }
        Control::ListDone(kind) => {
            let Some(listing) = listings.remove(&kind) else {
                return;
            };
            let mut gone = Vec::new();
            mirror.for_each_key(kind, &mut |namespace, name| {
                if !listing.seen.contains(namespace, name) {
                    gone.push(ObjectKey {
                        kind,
                        namespace: namespace.to_string(),
                        name: name.to_string(),
                    });
                }
            });
            for key in &gone {
                mirror.delete(key, None);
            }
            let seconds = listing.started.elapsed().as_secs_f64();
            metrics::listed(kind);
            tracing::info!(
                kind = kind.name(),
                objects = listing.seen.len(),
                deleted = gone.len(),
                seconds,
                "listed"
            );
            // The listed keys (megabytes for a large list) are freed before `ready` hands
            // free memory back.
            drop(listing);
            if listed.insert(kind) && listed.len() == watched {
                tracing::info!("every kind listed, serving decisions");
                mirror.ready();
            }
        }
    }
}

fn log_progress(listings: &mut std::collections::HashMap<Kind, Listing>) {
    let now = Instant::now();
    for (kind, listing) in listings.iter_mut() {
        if now.duration_since(listing.last_progress) >= PROGRESS_EVERY {
            listing.last_progress = now;
            let elapsed = now.duration_since(listing.started).as_secs_f64();
            let objects = listing.seen.len();
            tracing::info!(
                kind = kind.name(),
                objects,
                objects_per_second = (objects as f64 / elapsed.max(1e-9)).round(),
                "listing"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubernetes::watch::upsert_or_refusal;
    use crate::kubernetes::watched::{PodType, Watched};

    /// Kind, namespace and name.
    type HeldKey = (&'static str, String, String);

    /// A mirror that keeps the uid of each object by its key.
    #[derive(Default)]
    struct Held(std::sync::Mutex<std::collections::BTreeMap<HeldKey, String>>);

    impl Mirror for Held {
        fn upsert(&self, objects: Vec<Object>) {
            let mut held = self.0.lock().unwrap();
            for object in objects {
                let (kind, namespace, name) = key_of(&object);
                let uid = match &object {
                    Object::Pod(p) => p.uid().to_string(),
                    _ => String::new(),
                };
                held.insert((kind.name(), namespace.into(), name.into()), uid);
            }
        }
        fn delete(&self, key: &ObjectKey, uid: Option<&str>) {
            let mut held = self.0.lock().unwrap();
            let k = (key.kind.name(), key.namespace.clone(), key.name.clone());
            if uid.is_none_or(|uid| held.get(&k).is_some_and(|h| h == uid)) {
                held.remove(&k);
            }
        }
        fn for_each_key(&self, kind: Kind, each: &mut dyn FnMut(&str, &str)) {
            for (k, namespace, name) in self.0.lock().unwrap().keys() {
                if *k == kind.name() {
                    each(namespace, name);
                }
            }
        }
        fn ready(&self) {}
    }

    fn watched_pod(name: &str, cpu: &str) -> Watched<PodType> {
        let text = format!(
            r#"{{"metadata": {{"name": "{name}", "namespace": "shop", "uid": "u-{name}"}},
                "spec": {{"nodeName": "n1", "containers": [{{"name": "c",
                         "resources": {{"requests": {{"cpu": "{cpu}"}}}}}}]}}}}"#
        );
        serde_json::from_str(&text).expect("json")
    }

    /// What `mirror` holds after the applier has applied `changes` in order.
    fn applied(changes: Vec<Change>) -> Vec<HeldKey> {
        let mirror = Held::default();
        let (sender, received) = mpsc::channel(changes.len().max(1));
        for change in changes {
            assert!(sender.try_send(change).is_ok(), "room for every change");
        }
        drop(sender);
        apply_changes(received, &mirror, Kind::CORE.len());
        mirror.0.into_inner().unwrap().into_keys().collect()
    }

    #[test]
    fn a_refused_version_drops_the_held_one_in_a_watch_event_as_in_a_relist() {
        let list = |pods: Vec<Change>| {
            let mut changes = vec![Change::Other(Control::ListStarted(Kind::Pod))];
            changes.extend(pods);
            changes.push(Change::Other(Control::ListDone(Kind::Pod)));
            changes
        };
        let first = || {
            list(vec![
                upsert_or_refusal(watched_pod("web-1", "100m")),
                upsert_or_refusal(watched_pod("web-2", "100m")),
            ])
        };
        // A watch event carries web-1's new version, which the builder refuses.
        let mut watched = first();
        watched.push(upsert_or_refusal(watched_pod("web-1", "lots")));
        // A relist finds web-1 in that version.
        let mut relisted = first();
        relisted.extend(list(vec![
            upsert_or_refusal(watched_pod("web-1", "lots")),
            upsert_or_refusal(watched_pod("web-2", "100m")),
        ]));
        let only_web_2 = vec![("pod", "shop".to_string(), "web-2".to_string())];
        assert_eq!(applied(watched), only_web_2);
        assert_eq!(applied(relisted), only_web_2);
        // And a refused version within a list, after the good one, drops it too.
        let mut twice = first();
        twice.extend(list(vec![
            upsert_or_refusal(watched_pod("web-2", "100m")),
            upsert_or_refusal(watched_pod("web-1", "100m")),
            upsert_or_refusal(watched_pod("web-1", "lots")),
        ]));
        assert_eq!(applied(twice), only_web_2);
    }
}
