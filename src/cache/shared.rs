//! One copy of values many held objects have in common.

use std::hash::{BuildHasher, Hash};

use triomphe::Arc;

use crate::model::labels::Labels;
use crate::recent::RecentTable;

/// A shared handle that knows how many holders it has and where its value lives.
pub(crate) trait Handle: Clone + Hash + Eq {
    fn holders(&self) -> usize;
    /// The address of the value: two handles with one address hold one value.
    fn addr(&self) -> usize;
}

impl<T: ?Sized + Hash + Eq> Handle for Arc<T> {
    fn holders(&self) -> usize {
        Arc::count(self)
    }

    fn addr(&self) -> usize {
        Arc::as_ptr(self).cast::<u8>() as usize
    }
}

impl Handle for Labels {
    fn holders(&self) -> usize {
        Labels::holders(self)
    }

    fn addr(&self) -> usize {
        Labels::addr(self)
    }
}

/// Equal values of different objects become one allocation: memory per pod shrinks, and
/// hot values (label strings compared per node in a decision) stay in cache.
#[derive(Debug)]
pub(crate) struct Shared<H> {
    values: hashbrown::HashSet<H>,
    /// `values.len()` after the last sweep.
    swept: usize,
    /// Recent answers (address, handle asked about, answer) by the address of the handle
    /// asked about, which each entry holds so the address cannot be reused meanwhile.
    recent: RecentTable<(usize, H, H)>,
    addr_hasher: hashbrown::DefaultHashBuilder,
}

impl<H> Default for Shared<H> {
    fn default() -> Self {
        Self::remembering(0)
    }
}

impl<H> Shared<H> {
    /// A set that also remembers up to `capacity` recent answers by the address of the
    /// handle asked about. A bulk load asks about one memoized handle (see `server::memo`)
    /// for pod after pod: for values dear to hash, such as pod details, looking up an
    /// address is far cheaper.
    pub(crate) fn remembering(capacity: usize) -> Self {
        Self {
            values: hashbrown::HashSet::new(),
            swept: 0,
            recent: RecentTable::new(capacity, usize::MAX),
            addr_hasher: hashbrown::DefaultHashBuilder::default(),
        }
    }
}

impl<H: Handle> Shared<H> {
    /// The shared value equal to `value`, which becomes the shared one if none is.
    pub(crate) fn share(&mut self, value: &H) -> H {
        self.share_by(value, H::clone, false)
    }

    /// As [`Shared::share_in_place`], returning the shared value.
    pub(crate) fn share_by(&mut self, value: &H, make: impl FnOnce(&H) -> H, remember: bool) -> H {
        let mut value = value.clone();
        self.share_in_place(&mut value, make, remember);
        value
    }

    /// Makes `value` the shared value equal to it; if none is, `make(value)` (an equal
    /// value) becomes the shared one. With `remember` (and a set made
    /// [`remembering`](Shared::remembering)), the answer is remembered by `value`'s
    /// address, and an answer remembered before is used.
    ///
    /// A `value` that already is the shared one is left alone, its count untouched: a
    /// bulk load's pods carry handles another thread is cloning for the next pods, and a
    /// count changed on both threads moves its cache line between cores at every pod.
    pub(crate) fn share_in_place(
        &mut self,
        value: &mut H,
        make: impl FnOnce(&H) -> H,
        remember: bool,
    ) {
        if remember && self.recall(value) {
            return;
        }
        self.share_by_value(value, make, remember);
    }

    /// As [`Shared::share_in_place`] for a `value` whose address was not answered before
    /// (see [`Shared::recall`]): looked up by value.
    pub(crate) fn share_by_value(
        &mut self,
        value: &mut H,
        make: impl FnOnce(&H) -> H,
        remember: bool,
    ) {
        let shared = match self.values.get(&*value) {
            Some(shared) => shared.clone(),
            None => {
                let made = make(value);
                self.values.insert(made.clone());
                made
            }
        };
        if remember {
            let addr = value.addr();
            let hash = self.addr_hasher.hash_one(addr);
            match self.recent.find_mut(hash, |(held, ..)| *held == addr) {
                // Remembered already (asked by value without a recall first): the
                // entry's handle holds the address, the new answer replaces the old.
                Some(entry) => entry.2 = shared.clone(),
                None => {
                    let hasher = &self.addr_hasher;
                    self.recent.insert(
                        hash,
                        (addr, value.clone(), shared.clone()),
                        0,
                        |(a, ..)| hasher.hash_one(*a),
                    );
                }
            }
        }
        if shared.addr() != value.addr() {
            *value = shared;
        }
    }

    /// Makes `value` the answer remembered for its address, if there is one (read by
    /// address alone: neither the value nor its count is touched when the answer is
    /// `value` itself). Says whether there was.
    pub(crate) fn recall(&mut self, value: &mut H) -> bool {
        let addr = value.addr();
        match self
            .recent
            .find(self.addr_hasher.hash_one(addr), |(held, ..)| *held == addr)
        {
            Some((_, _, shared)) => {
                if shared.addr() != value.addr() {
                    *value = shared.clone();
                }
                true
            }
            None => false,
        }
    }

    /// Forgets the recent answers, and with them the handles asked about.
    pub(crate) fn forget_recent(&mut self) {
        self.recent.reset();
    }

    /// Forgets values nothing else holds any more, once the set has doubled since the
    /// last sweep (so sweeping stays amortized O(1) per value).
    pub(crate) fn sweep(&mut self) {
        if self.values.len() > 2 * self.swept + 4096 {
            // The recent answers hold values too: forget them first.
            self.forget_recent();
            self.values.retain(|v| v.holders() > 1);
            self.swept = self.values.len();
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_share_one_allocation_until_swept() {
        let mut shared = Shared::<Arc<str>>::remembering(16);
        let first: Arc<str> = "zone-a".into();
        let second: Arc<str> = "zone-a".into();
        assert!(Arc::ptr_eq(
            &shared.share_by(&first, Arc::clone, true),
            &first
        ));
        assert!(Arc::ptr_eq(
            &shared.share_by(&second, Arc::clone, true),
            &first
        ));
        // Asked again: answered from the address, the same answer.
        assert!(Arc::ptr_eq(
            &shared.share_by(&second, Arc::clone, true),
            &first
        ));
        drop(first);
        // Only the set holds it now; a sweep once the set has grown forgets it.
        for i in 0..5000 {
            let _ = shared.share(&Arc::from(format!("v{i}")));
        }
        shared.sweep();
        assert_eq!(shared.len(), 0);
    }

    #[test]
    fn a_made_copy_is_shared_and_made_once() {
        let mut shared = Shared::<Arc<str>>::remembering(16);
        let asked: Arc<str> = "app".into();
        let made = std::cell::Cell::new(0);
        let make = |value: &Arc<str>| {
            made.set(made.get() + 1);
            Arc::<str>::from(&**value)
        };
        let first = shared.share_by(&asked, make, true);
        assert!(!Arc::ptr_eq(&first, &asked));
        for value in [asked.clone(), "app".into()] {
            assert!(Arc::ptr_eq(&shared.share_by(&value, make, true), &first));
        }
        assert_eq!(made.get(), 1);
        // A sweep forgets the recent answers too: the asked handle no longer maps to a
        // value the set has dropped.
        drop(first);
        for i in 0..5000 {
            let _ = shared.share(&Arc::from(format!("v{i}")));
        }
        shared.sweep();
        assert_eq!(shared.len(), 0);
        let again = shared.share_by(&asked, make, true);
        assert_eq!(shared.len(), 1);
        assert_eq!(&*again, "app");
        assert_eq!(made.get(), 2);
    }

    #[test]
    fn a_handle_that_already_is_the_shared_one_is_left_alone() {
        let mut shared = Shared::<Arc<str>>::remembering(16);
        let first: Arc<str> = "zone-a".into();
        let mut asked = first.clone();
        shared.share_in_place(&mut asked, Arc::clone, true);
        assert!(Arc::ptr_eq(&asked, &first));
        // Held by `first`, `asked`, the set and the remembered answer (twice).
        assert_eq!(Arc::count(&first), 5);
        // Asked again, by address or by value: no count moves.
        assert!(shared.recall(&mut asked));
        shared.share_in_place(&mut asked, Arc::clone, false);
        assert!(Arc::ptr_eq(&asked, &first));
        assert_eq!(Arc::count(&first), 5);
        // An equal copy is replaced by the shared one, and let go.
        let copy: Arc<str> = "zone-a".into();
        let mut held = copy.clone();
        shared.share_in_place(&mut held, Arc::clone, false);
        assert!(Arc::ptr_eq(&held, &first));
        assert_eq!(Arc::count(&copy), 1);
        // A handle never asked about has no remembered answer.
        let mut other: Arc<str> = "zone-b".into();
        assert!(!shared.recall(&mut other));
        assert_eq!(&*other, "zone-b");
    }

    #[test]
    fn a_full_table_of_answers_lets_go_of_the_oldest_handle_only() {
        let mut shared = Shared::<Arc<str>>::remembering(2);
        let asked: Vec<Arc<str>> = ["a", "b", "c"].into_iter().map(Arc::from).collect();
        for handle in &asked {
            shared.share_by(handle, Arc::clone, true);
        }
        // "a" made way for "c": its handle is let go (held here and by the set only).
        assert_eq!(Arc::count(&asked[0]), 2);
        assert!(!shared.recall(&mut asked[0].clone()));
        for handle in &asked[1..] {
            assert!(shared.recall(&mut handle.clone()));
        }
        // Asked by value, it is still the shared one, and remembered again.
        assert!(Arc::ptr_eq(
            &shared.share_by(&asked[0], Arc::clone, true),
            &asked[0]
        ));
        assert!(shared.recall(&mut asked[0].clone()));
        assert!(!shared.recall(&mut asked[1].clone()));
    }

    #[test]
    fn forgetting_recent_answers_lets_go_of_the_handles_asked_about() {
        let mut shared = Shared::<Arc<str>>::remembering(16);
        let first: Arc<str> = "a".into();
        let copy: Arc<str> = "a".into();
        shared.share_by(&first, Arc::clone, true);
        assert!(Arc::ptr_eq(
            &shared.share_by(&copy, Arc::clone, true),
            &first
        ));
        // Held here and by the answer remembered for it.
        assert_eq!(Arc::count(&copy), 2);
        shared.forget_recent();
        assert_eq!(Arc::count(&copy), 1);
        assert!(Arc::ptr_eq(
            &shared.share_by(&copy, Arc::clone, true),
            &first
        ));
        drop(shared);
        // Without remembering, nothing is held beyond the set's own values.
        let mut plain = Shared::<Arc<str>>::remembering(16);
        plain.share_by(&first, Arc::clone, true);
        plain.share(&copy);
        assert_eq!(Arc::count(&copy), 1);
        let mut never = Shared::<Arc<str>>::default();
        never.share_by(&first, Arc::clone, true);
        never.share_by(&copy, Arc::clone, true);
        assert_eq!(Arc::count(&copy), 1);
    }
}
