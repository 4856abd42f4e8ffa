//! Lanes that run decisions side by side without waiting on one another.
//!
//! A decision splits its filter pass and dry runs over a rayon pool. Two decisions on one
//! shared pool slow each other down: a worker blocked in a join of decision A steals
//! whatever work is queued — decision B's whole root job included — and A then cannot
//! finish before B does. So each running decision gets a pool of its own (a lane, as
//! many threads as cores); the operating system shares the cores between lanes fairly.
//! Jobs beyond the number of lanes wait in arrival order and run on the first lane that
//! frees up.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Runs jobs (decisions) one per lane; see the module docs.
pub struct DecisionLanes {
    inner: Arc<Inner>,
}

struct Inner {
    /// Built on first use; `None` when the threads could not be started (the job then
    /// runs on the global rayon pool).
    pools: Vec<OnceLock<Option<rayon::ThreadPool>>>,
    threads_per_lane: usize,
    queue: Mutex<Queue>,
}

struct Queue {
    /// Free lanes, by index.
    idle: Vec<usize>,
    /// Jobs waiting for a lane, oldest first.
    waiting: VecDeque<Job>,
}

impl DecisionLanes {
    /// `lanes` decisions run at once, each on a pool of `threads_per_lane` threads (both
    /// at least 1).
    pub fn new(lanes: usize, threads_per_lane: usize) -> Self {
        let lanes = lanes.max(1);
        DecisionLanes {
            inner: Arc::new(Inner {
                pools: (0..lanes).map(|_| OnceLock::new()).collect(),
                threads_per_lane: threads_per_lane.max(1),
                queue: Mutex::new(Queue {
                    idle: (0..lanes).rev().collect(),
                    waiting: VecDeque::new(),
                }),
            }),
        }
    }

    /// One lane per core, each with a thread per core.
    pub fn per_core() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self::new(cores, cores)
    }

    /// How many lanes run jobs side by side.
    pub fn lanes(&self) -> usize {
        self.inner.pools.len()
    }

    /// Runs `job` on a free lane, or queues it until one frees up. Never blocks. A job
    /// that panics is dropped; its lane goes on.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        let job: Job = Box::new(job);
        let lane = {
            let mut queue = self.inner.queue.lock();
            match queue.idle.pop() {
                Some(lane) => lane,
                None => {
                    queue.waiting.push_back(job);
                    return;
                }
            }
        };
        Inner::run_on(&self.inner, lane, job);
    }
}

impl Inner {
    fn run_on(inner: &Arc<Inner>, lane: usize, job: Job) {
        let this = inner.clone();
        let work = move || {
            let mut job = job;
            loop {
                // The caller reports panics (its result channel is dropped); the lane
                // must survive them.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                let mut queue = this.queue.lock();
                match queue.waiting.pop_front() {
                    Some(next) => job = next,
                    None => {
                        queue.idle.push(lane);
                        return;
                    }
                }
            }
        };
        match inner.pool(lane) {
            Some(pool) => pool.spawn(work),
            None => rayon::spawn(work),
        }
    }

    fn pool(&self, lane: usize) -> Option<&rayon::ThreadPool> {
        self.pools[lane]
            .get_or_init(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(self.threads_per_lane)
                    .thread_name(move |i| format!("decide-{lane}-{i}"))
                    .build()
                    .inspect_err(|error| {
                        tracing::warn!(lane, %error, "decision lane threads did not start, using the shared pool");
                    })
                    .ok()
            })
            .as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn jobs_beyond_the_lanes_wait_and_run_in_arrival_order() {
        let lanes = DecisionLanes::new(1, 2);
        let (release, gate) = mpsc::channel::<()>();
        let (done, finished) = mpsc::channel();
        let first = done.clone();
        lanes.spawn(move || {
            gate.recv().unwrap();
            first.send(0).unwrap();
        });
        for i in 1..=5 {
            let done = done.clone();
            lanes.spawn(move || done.send(i).unwrap());
        }
        // Nothing else runs while the only lane is busy.
        assert!(finished.recv_timeout(Duration::from_millis(50)).is_err());
        release.send(()).unwrap();
        let order: Vec<i32> = (0..6)
            .map(|_| finished.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn each_running_job_has_a_pool_of_its_own_and_a_panic_frees_its_lane() {
        let lanes = DecisionLanes::new(2, 2);
        let (done, finished) = mpsc::channel();
        let (release, gate) = mpsc::channel::<()>();
        // Occupies one lane until released.
        let blocked = done.clone();
        lanes.spawn(move || {
            gate.recv().unwrap();
            blocked.send("blocked".to_string()).unwrap();
        });
        // The other lane still runs jobs, a panicking one included, and its parallel
        // work splits over its own threads.
        lanes.spawn(|| panic!("a failing decision"));
        let other = done.clone();
        lanes.spawn(move || {
            let threads = rayon::current_num_threads();
            let lane = std::thread::current().name().unwrap_or("").to_string();
            other.send(format!("{threads} {lane}")).unwrap();
        });
        let free = finished.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(free.starts_with("2 decide-"), "{free}");
        release.send(()).unwrap();
        assert_eq!(
            finished.recv_timeout(Duration::from_secs(10)).unwrap(),
            "blocked"
        );
    }
}
