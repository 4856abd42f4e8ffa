//! Cluster-scoped objects kept by name (PriorityClasses, Namespaces): few, rarely changed.

use std::collections::HashMap;

use super::Str;

/// An object known by its name.
pub trait Named {
    fn name(&self) -> &Str;
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
    pub fn insert(&mut self, object: T) {
        self.0.insert(object.name().clone(), object);
    }

    pub fn remove(&mut self, name: &str) -> Option<T> {
        self.0.remove(name)
    }

    pub fn get(&self, name: &str) -> Option<&T> {
        self.0.get(name)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn names(&self) -> impl Iterator<Item = &Str> {
        self.0.keys()
    }

    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.0.values()
    }
}
