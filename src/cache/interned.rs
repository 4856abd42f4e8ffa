//! The cache's interning tables: values nodes and pods have in common, held once.

use triomphe::Arc;

use crate::model::Str;
use crate::model::labels::Labels;
use crate::model::{Interner, PodDetails};

use super::shared::Shared;

/// The cache's interning tables (see [`Pod::compact`]).
#[derive(Debug)]
pub(super) struct Interned {
    pub(super) strings: Shared<Str>,
    pub(super) label_sets: Shared<Labels>,
    pub(super) pod_details: Shared<Arc<PodDetails>>,
    /// A batch is being upserted (a bulk load): answers are remembered by address, as its
    /// pods hand the same memoized handles again and again. A lone update's are new each
    /// time, and remembering them would only hold garbage.
    pub(super) bulk: bool,
}

/// Answers remembered by address (see [`Shared::remembering`]) for pod details: as many
/// templates as a bulk load's conversions remember, so that every pod of a template they
/// still hold is answered by address; a full table takes ~5 MB.
const RECENT_POD_DETAILS: usize = 1 << 16;

/// Answers remembered by address for strings and label sets: those of a load repeat pod
/// after pod (namespaces, a node's name, an app's labels).
const RECENT_VALUES: usize = 1024;

impl Default for Interned {
    fn default() -> Self {
        Self {
            strings: Shared::remembering(RECENT_VALUES),
            label_sets: Shared::remembering(RECENT_VALUES),
            pod_details: Shared::remembering(RECENT_POD_DETAILS),
            bulk: false,
        }
    }
}

impl Interned {
    pub(super) fn sweep(&mut self) {
        self.strings.sweep();
        self.label_sets.sweep();
        self.pod_details.sweep();
    }
}

impl Interner for Interned {
    fn share_str(&mut self, s: &mut Str) {
        self.strings.share_in_place(s, Str::clone, self.bulk);
    }

    fn share_labels(&mut self, labels: &mut Labels) {
        let (strings, bulk) = (&mut self.strings, self.bulk);
        self.label_sets.share_in_place(
            labels,
            |labels| labels.with_shared_strings(|s| strings.share_by(s, Str::clone, bulk)),
            bulk,
        );
    }

    fn share_details(&mut self, details: &mut Arc<PodDetails>) {
        // A handle answered before is known to be held already, specs dropped: its value
        // is not read (see `Shared::share_in_place`).
        if self.bulk && self.pod_details.recall(details) {
            return;
        }
        if details.holds_specs() {
            Arc::make_mut(details).drop_specs();
        }
        self.pod_details
            .share_by_value(details, Arc::clone, self.bulk);
    }
}
