//! Cluster-scoped objects kept by name (PriorityClasses, Namespaces): few, rarely changed.

use std::collections::HashMap;

use super::Str;

/// An object known by its name.
pub trait Named {
    /// The object's name.
    fn name(&self) -> &Str;
    /// The object's uid.
    fn uid(&self) -> &Str;
    /// The object's resource version (0: unversioned).
    fn resource_version(&self) -> u64;
}

/// Objects of one kind by name.
#[derive(Debug, Clone)]
pub struct ByName<T>(HashMap<Str, T>);

impl<T> Default for ByName<T> {
    fn default() -> Self {
        ByName(HashMap::new())
    }
}

impl<T: Named> ByName<T> {
    /// Adds `object`, replacing the one of its name.
    pub fn insert(&mut self, object: T) {
        self.0.insert(object.name().clone(), object);
    }

    /// Removes and returns the object named `name`.
    pub fn remove(&mut self, name: &str) -> Option<T> {
        self.0.remove(name)
    }

    /// The object named `name`.
    pub fn get(&self, name: &str) -> Option<&T> {
        self.0.get(name)
    }

    /// How many objects are held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No object is held.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names held.
    pub fn names(&self) -> impl Iterator<Item = &Str> {
        self.0.keys()
    }

    /// The objects held.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.0.values()
    }
}
