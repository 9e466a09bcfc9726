//! Values a layer hands the handlers below it through their context: [`Extensions`].

use std::any::{Any, TypeId};
use std::sync::Arc;

/// A small map from type to value that travels with a call's [`ToolContext`](super::ToolContext),
/// as rmcp's request context carries extensions: what a layer above the tool passes down
/// without the context naming it. The engine puts the registry's
/// [`SerialLane`](crate::SerialLane) and the run's
/// [`PermissionManager`](crate::PermissionManager) here (a subagent shares both), and a durable
/// run the call's [`DurableInput`](crate::journal::DurableInput) (which `ask_user` reads).
///
/// It is immutable and cheap to clone (clones share it); [`with`](Self::with) makes a new one
/// with one value more.
///
/// ```
/// use harnessx::context::Extensions;
///
/// #[derive(Debug, PartialEq)]
/// struct TenantId(u32);
///
/// let ext = Extensions::new().with(TenantId(7));
/// assert_eq!(ext.get::<TenantId>(), Some(&TenantId(7)));
/// assert_eq!(ext.get::<String>(), None);
/// // A second value of one type replaces the first.
/// assert_eq!(ext.with(TenantId(8)).get::<TenantId>(), Some(&TenantId(8)));
/// ```
#[derive(Clone, Default)]
pub struct Extensions {
    entries: Option<Arc<[Entry]>>,
}

#[derive(Clone)]
struct Entry {
    type_id: TypeId,
    type_name: &'static str,
    value: Arc<dyn Any + Send + Sync>,
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of type `T`, if there is one.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.entries
            .as_deref()?
            .iter()
            .find(|e| e.type_id == TypeId::of::<T>())
            .and_then(|e| e.value.downcast_ref())
    }

    /// The value of type `T` as a shared handle, if there is one.
    pub fn get_arc<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.entries
            .as_deref()?
            .iter()
            .find(|e| e.type_id == TypeId::of::<T>())
            .and_then(|e| Arc::clone(&e.value).downcast().ok())
    }

    /// A map with these values and `value` (replacing a value of the same type).
    pub fn with<T: Any + Send + Sync>(&self, value: T) -> Self {
        self.with_entries(std::iter::once(Entry {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
            value: Arc::new(value),
        }))
    }

    /// A map with these values and those of `other` (which win where both hold a type).
    pub fn merged(&self, other: &Extensions) -> Self {
        match (&self.entries, &other.entries) {
            (_, None) => self.clone(),
            (None, Some(_)) => other.clone(),
            (Some(_), Some(theirs)) => self.with_entries(theirs.iter().cloned()),
        }
    }

    fn with_entries(&self, added: impl Iterator<Item = Entry> + Clone) -> Self {
        let mut entries: Vec<Entry> = self
            .entries
            .as_deref()
            .unwrap_or_default()
            .iter()
            .filter(|e| added.clone().all(|a| a.type_id != e.type_id))
            .cloned()
            .collect();
        entries.extend(added);
        Self {
            entries: Some(entries.into()),
        }
    }

    /// How many values there are.
    pub fn len(&self) -> usize {
        self.entries.as_deref().map_or(0, <[Entry]>::len)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries(
                self.entries
                    .as_deref()
                    .unwrap_or_default()
                    .iter()
                    .map(|e| e.type_name),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::Extensions;

    #[test]
    fn values_are_found_by_type_and_replaced_by_type() {
        let base = Extensions::new().with(1_u8).with("lane");
        let more = base.with(2_u8);
        assert_eq!(base.get::<u8>(), Some(&1));
        assert_eq!(more.get::<u8>(), Some(&2));
        assert_eq!(more.get::<&str>(), Some(&"lane"));
        assert_eq!(more.len(), 2);
        assert!(Extensions::new().is_empty());
        assert_eq!(format!("{more:?}"), r#"{"&str", "u8"}"#);
        assert_eq!(more.get_arc::<u8>().as_deref(), Some(&2));
    }

    #[test]
    fn a_merge_keeps_both_and_the_other_wins() {
        let ours = Extensions::new().with(1_u8).with(10_u16);
        let theirs = Extensions::new().with(2_u8).with(20_u32);
        let merged = ours.merged(&theirs);
        assert_eq!(merged.get::<u8>(), Some(&2));
        assert_eq!(merged.get::<u16>(), Some(&10));
        assert_eq!(merged.get::<u32>(), Some(&20));
        assert_eq!(merged.len(), 3);
        assert_eq!(Extensions::new().merged(&theirs).len(), 2);
        assert_eq!(ours.merged(&Extensions::new()).len(), 2);
    }
}
