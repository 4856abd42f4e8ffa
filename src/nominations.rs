//! The nominations log: a revisioned sequence of nomination changes with a bounded
//! history and fan-out to subscribers.
//!
//! Revisions are the log's own counter, one per event, strictly increasing (not the
//! cache revision): that makes "resume after N" exact even when one commit produces
//! several events. Publishing never waits for a subscriber: each one has a bounded
//! queue and is cut off (its stream ends with [`End::Lagged`]) the moment it is full.
//!
//! Knows nothing of gRPC; the server maps [`End`] and [`SubscribeError`] to statuses.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};

use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_stream::Stream;

use crate::model::{PodRef, Str};

/// The kind of change an event records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// The pod is now nominated to the node.
    Nominated,
    /// The pod's nomination to the node was cleared.
    Cleared,
    /// The pod, bound to the node, was marked terminating by a preemption.
    VictimMarked,
}

/// One change, as published (without a revision) or delivered (with one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Log revision; for initial events, the revision of the list they come from.
    pub revision: u64,
    /// What happened.
    pub kind: EventKind,
    /// The pod it happened to.
    pub pod: PodRef,
    /// The node it concerns.
    pub node: Str,
    /// The pod's priority.
    pub priority: i32,
    /// Part of the initial list of a watch from 0.
    pub initial: bool,
    /// The revision of the last event published with this one: the events of one
    /// change (a commit's victims, cleared nominations and every nomination it records)
    /// share it, and the change is complete at the event whose revision equals it.
    /// Initial events carry the list's revision.
    pub batch: u64,
}

impl Event {
    /// An event not yet given a revision.
    pub fn new(kind: EventKind, pod: PodRef, node: Str, priority: i32) -> Self {
        Event {
            revision: 0,
            kind,
            pod,
            node,
            priority,
            initial: false,
            batch: 0,
        }
    }
}

/// Why a subscription ended (after every event queued for it was delivered).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum End {
    /// The subscriber read too slowly.
    #[error(
        "subscriber fell more than {buffer} events behind and was cut off; resume after revision {last_delivered}"
    )]
    Lagged {
        /// How many events a subscriber may fall behind.
        buffer: usize,
        /// The revision of the last event delivered.
        last_delivered: u64,
    },
    /// The server is shutting down.
    #[error("nominations log closed: server is shutting down")]
    Closed,
}

/// Why a subscription could not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubscribeError {
    /// The revision to resume after is older than the log holds.
    #[error(
        "revision {after} is no longer held: the oldest revision still held is {oldest}; list nominations again"
    )]
    Expired {
        /// The revision asked for.
        after: u64,
        /// The oldest revision still held.
        oldest: u64,
    },
    /// The revision to resume after is newer than the log.
    #[error("revision {after} is ahead of the nominations log (at revision {current})")]
    Ahead {
        /// The revision asked for.
        after: u64,
        /// The log's revision.
        current: u64,
    },
    /// The server is shutting down.
    #[error("nominations log closed: server is shutting down")]
    Closed,
}

const OPEN: u8 = 0;
const LAGGED: u8 = 1;
const CLOSED: u8 = 2;

struct Subscriber {
    sender: mpsc::Sender<Arc<Event>>,
    /// Why the sender was dropped; read by the subscription once its queue is drained.
    state: Arc<AtomicU8>,
}

struct Inner {
    revision: u64,
    history: VecDeque<Arc<Event>>,
    subscribers: Vec<Subscriber>,
    closed: bool,
}

/// The log. Share it behind an `Arc`.
pub struct NominationLog {
    inner: Mutex<Inner>,
    capacity: usize,
    buffer: usize,
}

impl NominationLog {
    /// `capacity`: events kept for resuming; `buffer`: events queued per subscriber before
    /// it is cut off. Both at least 1.
    pub fn new(capacity: usize, buffer: usize) -> Self {
        NominationLog {
            inner: Mutex::new(Inner {
                revision: 0,
                history: VecDeque::with_capacity(capacity.clamp(1, 65_536)),
                subscribers: Vec::new(),
                closed: false,
            }),
            capacity: capacity.max(1),
            buffer: buffer.max(1),
        }
    }

    /// The revision of the last event published (0 before any).
    pub fn revision(&self) -> u64 {
        self.inner.lock().revision
    }

    /// The oldest revision still held for resuming, if any.
    pub fn oldest(&self) -> Option<u64> {
        self.inner.lock().history.front().map(|e| e.revision)
    }

    /// Appends `events` (revisions assigned here, in order) as one batch and fans them
    /// out. Never waits: a subscriber whose queue is full is cut off. Returns the
    /// revision of the last event (the current revision when `events` is empty).
    pub fn publish(&self, events: impl IntoIterator<Item = Event>) -> u64 {
        let events: Vec<Event> = events.into_iter().collect();
        let mut inner = self.inner.lock();
        if inner.closed {
            return inner.revision;
        }
        let batch = inner.revision + events.len() as u64;
        for mut event in events {
            inner.revision += 1;
            event.revision = inner.revision;
            event.initial = false;
            event.batch = batch;
            let event = Arc::new(event);
            if inner.history.len() == self.capacity {
                inner.history.pop_front();
            }
            inner.history.push_back(event.clone());
            inner
                .subscribers
                .retain(|s| match s.sender.try_send(event.clone()) {
                    Ok(()) => true,
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        s.state.store(LAGGED, Ordering::Release);
                        false
                    }
                    // The subscription was dropped (client went away).
                    Err(mpsc::error::TrySendError::Closed(_)) => false,
                });
        }
        inner.revision
    }

    /// Subscribes to the events after `after`, replaying the held history first.
    /// `after == revision()` subscribes to live events only.
    pub fn subscribe(&self, after: u64) -> Result<Subscription, SubscribeError> {
        let mut inner = self.inner.lock();
        if inner.closed {
            return Err(SubscribeError::Closed);
        }
        if after > inner.revision {
            return Err(SubscribeError::Ahead {
                after,
                current: inner.revision,
            });
        }
        let backlog: VecDeque<Arc<Event>> = if after == inner.revision {
            VecDeque::new()
        } else {
            // Revisions in history are contiguous, so the events after `after` are held
            // exactly when the oldest held is at most `after + 1`.
            let oldest = inner
                .history
                .front()
                .map(|e| e.revision)
                .unwrap_or(u64::MAX);
            if oldest > after.saturating_add(1) {
                return Err(SubscribeError::Expired {
                    after,
                    oldest: inner.history.front().map(|e| e.revision).unwrap_or(0),
                });
            }
            let skip = usize::try_from(after.saturating_add(1) - oldest).unwrap_or(usize::MAX);
            inner.history.iter().skip(skip).cloned().collect()
        };
        Ok(self.register(&mut inner, backlog, after))
    }

    /// Subscribes to live events with `initial` delivered first, all stamped with the
    /// current revision. The caller builds `initial` (the current nominations) while
    /// holding whatever lock orders its changes before publishing, so nothing falls
    /// between the list and the live events. Returns the subscription and the revision.
    pub fn subscribe_with_initial(
        &self,
        initial: Vec<Event>,
    ) -> Result<(Subscription, u64), SubscribeError> {
        let mut inner = self.inner.lock();
        if inner.closed {
            return Err(SubscribeError::Closed);
        }
        let revision = inner.revision;
        let backlog = initial
            .into_iter()
            .map(|mut e| {
                e.revision = revision;
                e.initial = true;
                e.batch = revision;
                Arc::new(e)
            })
            .collect();
        Ok((self.register(&mut inner, backlog, revision), revision))
    }

    fn register(
        &self,
        inner: &mut Inner,
        backlog: VecDeque<Arc<Event>>,
        after: u64,
    ) -> Subscription {
        let (sender, receiver) = mpsc::channel(self.buffer);
        let state = Arc::new(AtomicU8::new(OPEN));
        inner.subscribers.push(Subscriber {
            sender,
            state: state.clone(),
        });
        Subscription {
            backlog,
            receiver,
            state,
            buffer: self.buffer,
            last_delivered: after,
            finished: false,
        }
    }

    /// Ends every subscription with [`End::Closed`] and refuses new ones (shutdown).
    pub fn close(&self) {
        let mut inner = self.inner.lock();
        inner.closed = true;
        for s in inner.subscribers.drain(..) {
            s.state.store(CLOSED, Ordering::Release);
        }
    }

    /// Number of live subscribers (for metrics and tests).
    pub fn subscriber_count(&self) -> usize {
        self.inner.lock().subscribers.len()
    }
}

/// A stream of events: the backlog (replay or initial list), then live events; it ends
/// with one `Err(End)` when the log cut it off or closed.
pub struct Subscription {
    backlog: VecDeque<Arc<Event>>,
    receiver: mpsc::Receiver<Arc<Event>>,
    state: Arc<AtomicU8>,
    buffer: usize,
    last_delivered: u64,
    finished: bool,
}

impl Subscription {
    fn deliver(&mut self, event: Arc<Event>) -> Poll<Option<Result<Arc<Event>, End>>> {
        self.last_delivered = event.revision;
        Poll::Ready(Some(Ok(event)))
    }
}

impl Stream for Subscription {
    type Item = Result<Arc<Event>, End>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.finished {
            return Poll::Ready(None);
        }
        if let Some(event) = self.backlog.pop_front() {
            return self.deliver(event);
        }
        match self.receiver.poll_recv(cx) {
            Poll::Ready(Some(event)) => self.deliver(event),
            Poll::Ready(None) => {
                // The log dropped our sender: say why, once.
                self.finished = true;
                let end = match self.state.load(Ordering::Acquire) {
                    LAGGED => End::Lagged {
                        buffer: self.buffer,
                        last_delivered: self.last_delivered,
                    },
                    _ => End::Closed,
                };
                Poll::Ready(Some(Err(end)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_stream::StreamExt;

    fn ev(name: &str) -> Event {
        Event::new(
            EventKind::Nominated,
            PodRef {
                namespace: "ns".into(),
                name: name.into(),
                uid: name.into(),
            },
            "node".into(),
            1,
        )
    }

    fn names(events: &[Arc<Event>]) -> Vec<(u64, String)> {
        events
            .iter()
            .map(|e| (e.revision, e.pod.name.to_string()))
            .collect()
    }

    async fn take(sub: &mut Subscription, n: usize) -> Vec<Arc<Event>> {
        let mut out = Vec::new();
        for _ in 0..n {
            match sub.next().await {
                Some(Ok(e)) => out.push(e),
                other => panic!("unexpected {other:?}"),
            }
        }
        out
    }

    #[tokio::test]
    async fn resume_replays_exactly_after_revision() {
        let log = NominationLog::new(8, 16);
        log.publish([ev("a"), ev("b"), ev("c")]);
        let mut sub = log.subscribe(1).unwrap();
        log.publish([ev("d")]);
        let got = take(&mut sub, 3).await;
        assert_eq!(
            names(&got),
            vec![(2, "b".into()), (3, "c".into()), (4, "d".into())]
        );
    }

    #[tokio::test]
    async fn expired_and_ahead_revisions_fail() {
        let log = NominationLog::new(2, 16);
        log.publish([ev("a"), ev("b"), ev("c")]);
        assert_eq!(log.oldest(), Some(2));
        assert!(log.subscribe(1).is_ok());
        assert_eq!(
            log.subscribe(0).err(),
            Some(SubscribeError::Expired {
                after: 0,
                oldest: 2
            })
        );
        assert_eq!(
            log.subscribe(9).err(),
            Some(SubscribeError::Ahead {
                after: 9,
                current: 3
            })
        );
    }

    #[tokio::test]
    async fn full_subscriber_is_cut_off_without_blocking_others() {
        let log = NominationLog::new(64, 2);
        let mut stalled = log.subscribe(0).unwrap();
        let mut reader = log.subscribe(0).unwrap();
        for i in 0..5 {
            log.publish([ev(&format!("p{i}"))]);
            assert!(reader.next().await.unwrap().is_ok());
        }
        assert_eq!(log.subscriber_count(), 1);
        let first = take(&mut stalled, 2).await;
        assert_eq!(first.last().map(|e| e.revision), Some(2));
        assert_eq!(
            stalled.next().await,
            Some(Err(End::Lagged {
                buffer: 2,
                last_delivered: 2
            }))
        );
        assert_eq!(stalled.next().await, None);
    }

    #[tokio::test]
    async fn initial_list_comes_first_then_live() {
        let log = NominationLog::new(8, 8);
        log.publish([ev("old")]);
        let (mut sub, rev) = log.subscribe_with_initial(vec![ev("x"), ev("y")]).unwrap();
        assert_eq!(rev, 1);
        log.publish([ev("z")]);
        let got = take(&mut sub, 3).await;
        assert_eq!(
            names(&got),
            vec![(1, "x".into()), (1, "y".into()), (2, "z".into())]
        );
        assert!(got[0].initial && !got[2].initial);
        log.close();
        assert_eq!(sub.next().await, Some(Err(End::Closed)));
    }
}
