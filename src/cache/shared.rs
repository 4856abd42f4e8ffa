//! One copy of values many held objects have in common.

use std::borrow::Borrow;
use std::hash::Hash;

use triomphe::Arc;

use crate::model::labels::Labels;

/// A shared handle that knows how many holders it has.
pub(crate) trait Handle: Clone + Hash + Eq {
    fn holders(&self) -> usize;
}

impl<T: ?Sized + Hash + Eq> Handle for Arc<T> {
    fn holders(&self) -> usize {
        Arc::count(self)
    }
}

impl Handle for Labels {
    fn holders(&self) -> usize {
        Labels::holders(self)
    }
}

/// Equal values of different objects become one allocation: memory per pod shrinks, and
/// hot values (label strings compared per node in a decision) stay in cache.
#[derive(Debug)]
pub(crate) struct Shared<H> {
    values: hashbrown::HashSet<H>,
    /// `values.len()` after the last sweep.
    swept: usize,
}

impl<H> Default for Shared<H> {
    fn default() -> Self {
        Self {
            values: hashbrown::HashSet::new(),
            swept: 0,
        }
    }
}

impl<H: Handle> Shared<H> {
    /// The shared value equal to `value`, which becomes the shared one if none is.
    pub(crate) fn share(&mut self, value: &H) -> H {
        match self.values.get(value) {
            Some(shared) => shared.clone(),
            None => {
                self.values.insert(value.clone());
                value.clone()
            }
        }
    }

    /// The shared value equal to `value`, if there is one.
    pub(crate) fn get<Q: ?Sized + Hash + Eq>(&self, value: &Q) -> Option<H>
    where
        H: Borrow<Q>,
    {
        self.values.get(value).cloned()
    }

    /// Forgets values nothing else holds any more, once the set has doubled since the
    /// last sweep (so sweeping stays amortized O(1) per value).
    pub(crate) fn sweep(&mut self) {
        if self.values.len() > 2 * self.swept + 4096 {
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
        let mut shared = Shared::<Arc<str>>::default();
        let first: Arc<str> = "zone-a".into();
        let second: Arc<str> = "zone-a".into();
        assert!(Arc::ptr_eq(&shared.share(&first), &first));
        assert!(Arc::ptr_eq(&shared.share(&second), &first));
        drop(first);
        // Only the set holds it now; a sweep once the set has grown forgets it.
        for i in 0..5000 {
            let _ = shared.share(&Arc::from(format!("v{i}")));
        }
        shared.sweep();
        assert_eq!(shared.len(), 0);
    }
}
