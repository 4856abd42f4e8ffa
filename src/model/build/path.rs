//! Field paths, written out only when an error names one: formatting a path for every
//! field built cost a tenth of a bulk load.

use std::fmt::{self, Write as _};

use super::BuildError;
use super::rules::Invalid;

/// A field path as a list through the stack, from the field up to the object.
#[derive(Clone, Copy)]
pub(super) enum Path<'a> {
    /// The object itself.
    Object,
    /// `parent.name` (`name` may hold several dotted fields).
    Field(&'a Path<'a>, &'a str),
    /// `parent[i]`
    Index(&'a Path<'a>, usize),
    /// `parent[key]`: a map's entry.
    Key(&'a Path<'a>, &'a str),
}

/// The object's own path, to start from.
pub(super) static OBJECT: Path<'static> = Path::Object;

impl<'a> Path<'a> {
    pub(super) fn field(&'a self, name: &'a str) -> Path<'a> {
        Path::Field(self, name)
    }

    pub(super) fn index(&'a self, i: usize) -> Path<'a> {
        Path::Index(self, i)
    }

    pub(super) fn key(&'a self, key: &'a str) -> Path<'a> {
        Path::Key(self, key)
    }

    /// The error refusing this field.
    #[cold]
    pub(super) fn error(self, message: impl Into<String>) -> BuildError {
        BuildError {
            path: self.to_string(),
            message: message.into(),
        }
    }

    /// A rule's verdict on this field.
    #[inline]
    pub(super) fn check<T>(self, verdict: Result<T, Invalid>) -> Result<T, BuildError> {
        verdict.map_err(|Invalid(message)| self.error(message))
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Object => Ok(()),
            Path::Field(Path::Object, name) => f.write_str(name),
            Path::Field(parent, name) => write!(f, "{parent}.{name}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
            Path::Key(parent, key) => {
                write!(f, "{parent}[")?;
                f.write_str(key)?;
                f.write_char(']')
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_written_out_as_fields_indexes_and_keys() {
        let spec = OBJECT.field("spec");
        let containers = spec.field("containers");
        let container = containers.index(2);
        let resources = container.field("resources.requests");
        assert_eq!(
            resources.key("example.com/gpu").to_string(),
            "spec.containers[2].resources.requests[example.com/gpu]"
        );
        assert_eq!(OBJECT.to_string(), "");
        assert_eq!(OBJECT.index(3).to_string(), "[3]");
        let error = OBJECT.field("metadata.name").error("must not be empty");
        assert_eq!(error.to_string(), "metadata.name: must not be empty");
    }
}
