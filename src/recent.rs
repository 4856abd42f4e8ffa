//! A hash table of the most recently added entries, bounded in count and weight.
//!
//! Once full, it drops its oldest entry for each one it takes in, rather than starting
//! over: a table of tens of thousands of entries never drops them all at once, so no call
//! stalls for milliseconds (a `Sync` stream's receiving task runs on an async thread, and
//! the cache's interner under the table lock), and the entries still in use are not lost
//! all together.

use std::collections::VecDeque;

use hashbrown::HashTable;

/// The table: entries `T`, each added with its hash and a weight (bytes it holds, say).
#[derive(Debug)]
pub struct RecentTable<T> {
    entries: HashTable<(u64, T)>,
    /// Hash, serial and weight of each entry, oldest first.
    order: VecDeque<(u64, u64, usize)>,
    next_serial: u64,
    weight: usize,
    max_entries: usize,
    max_weight: usize,
}

impl<T> RecentTable<T> {
    /// A table of at most `max_entries` entries weighing at most `max_weight` in all.
    pub fn new(max_entries: usize, max_weight: usize) -> Self {
        Self {
            entries: HashTable::new(),
            order: VecDeque::new(),
            next_serial: 0,
            weight: 0,
            max_entries,
            max_weight,
        }
    }

    /// The entry under `hash` that `eq` accepts, if any.
    pub fn find(&self, hash: u64, mut eq: impl FnMut(&T) -> bool) -> Option<&T> {
        self.entries
            .find(hash, |(_, entry)| eq(entry))
            .map(|(_, entry)| entry)
    }

    /// The entry under `hash` that `eq` accepts, if any, to change in place.
    pub fn find_mut(&mut self, hash: u64, mut eq: impl FnMut(&T) -> bool) -> Option<&mut T> {
        self.entries
            .find_mut(hash, |(_, entry)| eq(entry))
            .map(|(_, entry)| entry)
    }

    /// Adds `entry` (which no entry equals) under `hash`, first dropping the oldest entries
    /// it would not fit beside. `rehash` gives an entry's hash, for growing. An entry
    /// heavier than the whole table is not kept.
    pub fn insert(&mut self, hash: u64, entry: T, weight: usize, rehash: impl Fn(&T) -> u64) {
        if self.max_entries == 0 || weight > self.max_weight {
            return;
        }
        while self.entries.len() >= self.max_entries || self.weight + weight > self.max_weight {
            self.drop_oldest();
        }
        let serial = self.next_serial;
        self.next_serial += 1;
        self.entries
            .insert_unique(hash, (serial, entry), |(_, held)| rehash(held));
        self.order.push_back((hash, serial, weight));
        self.weight += weight;
    }

    fn drop_oldest(&mut self) {
        let Some((hash, serial, weight)) = self.order.pop_front() else {
            return;
        };
        // Every entry has one record in `order`, so the oldest record's entry is held.
        if let Ok(entry) = self.entries.find_entry(hash, |(held, _)| *held == serial) {
            entry.remove();
        }
        self.weight -= weight;
    }

    /// Drops every entry and the memory that held them.
    pub fn reset(&mut self) {
        *self = Self::new(self.max_entries, self.max_weight);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The weight of the entries held.
    #[cfg(test)]
    fn weight(&self) -> usize {
        self.weight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(key: u32) -> u64 {
        // Equal low bits for every key would do too: the table compares entries.
        u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    fn add(table: &mut RecentTable<(u32, &'static str)>, key: u32, weight: usize) {
        table.insert(hash(key), (key, "v"), weight, |(k, _)| hash(*k));
    }

    fn held(table: &RecentTable<(u32, &'static str)>) -> Vec<u32> {
        let mut keys: Vec<u32> = (0..100)
            .filter(|&k| table.find(hash(k), |(held, _)| *held == k).is_some())
            .collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn a_full_table_drops_its_oldest_entry_for_each_new_one() {
        let mut table = RecentTable::new(3, usize::MAX);
        for key in 0..3 {
            add(&mut table, key, 1);
        }
        assert_eq!(held(&table), [0, 1, 2]);
        add(&mut table, 3, 1);
        assert_eq!(held(&table), [1, 2, 3]);
        // Found again, an entry is not made younger: the order is the order of adding.
        assert!(table.find(hash(1), |(k, _)| *k == 1).is_some());
        add(&mut table, 4, 1);
        assert_eq!(held(&table), [2, 3, 4]);
        assert_eq!(table.len(), 3);
        if let Some(entry) = table.find_mut(hash(3), |(k, _)| *k == 3) {
            entry.1 = "changed";
        }
        assert_eq!(table.find(hash(3), |(k, _)| *k == 3).unwrap().1, "changed");
    }

    #[test]
    fn weight_is_bounded_as_count_is() {
        let mut table = RecentTable::new(100, 10);
        add(&mut table, 0, 4);
        add(&mut table, 1, 4);
        assert_eq!(table.weight(), 8);
        // 8 + 5 > 10: the oldest goes.
        add(&mut table, 2, 5);
        assert_eq!(held(&table), [1, 2]);
        assert_eq!(table.weight(), 9);
        // Heavier than the whole table: not kept, nothing dropped for it.
        add(&mut table, 3, 11);
        assert_eq!(held(&table), [1, 2]);
        // Heavy enough to need both gone.
        add(&mut table, 4, 10);
        assert_eq!(held(&table), [4]);
        assert_eq!(table.weight(), 10);
    }

    #[test]
    fn entries_with_one_hash_are_told_apart_and_dropped_in_order() {
        let mut table = RecentTable::new(2, usize::MAX);
        let same = |_: &(u32, &str)| 7;
        table.insert(7, (1, "a"), 0, same);
        table.insert(7, (2, "b"), 0, same);
        table.insert(7, (3, "c"), 0, same);
        assert!(table.find(7, |(k, _)| *k == 1).is_none());
        assert_eq!(table.find(7, |(k, _)| *k == 2).unwrap().1, "b");
        assert_eq!(table.find(7, |(k, _)| *k == 3).unwrap().1, "c");
    }

    #[test]
    fn resetting_and_a_table_of_no_entries() {
        let mut table = RecentTable::new(4, usize::MAX);
        add(&mut table, 1, 3);
        table.reset();
        assert!(table.is_empty());
        assert_eq!(table.weight(), 0);
        add(&mut table, 2, 3);
        assert_eq!(held(&table), [2]);
        table.reset();
        assert!(table.is_empty());
        add(&mut table, 5, 1);
        assert_eq!(held(&table), [5]);
        let mut none = RecentTable::new(0, usize::MAX);
        add(&mut none, 1, 0);
        assert!(none.is_empty());
    }
}
