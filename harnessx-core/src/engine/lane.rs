//! Serial lanes: every execution of a serial tool takes a turn on its registry's lane, whether
//! it comes from a batch, a direct `execute`, another run on the same registry or a subagent on a
//! shared lane.
//!
//! A serial call may itself run tools (a serial tool that calls `registry.execute`, a subagent
//! registered as serial): those nested calls cannot wait for the lane their caller holds, or
//! they would wait forever. So a turn carries, in a task-local, the lanes it holds, each with a
//! fresh *inner* lane: a nested serial call on a held lane takes its turn on the inner lane
//! instead. Nested serial calls of one caller still take turns among themselves, and no call
//! ever waits for a turn its own caller holds.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{Mutex, OwnedMutexGuard};

/// The lane serial tools take turns on. Clones share the lane; give an agent's and its
/// specialists' registries the same lane so their serial tools never overlap.
///
/// Every execution of a serial tool (`concurrent = false`) holds a turn on its registry's lane
/// while its handler runs: in a batch, through [`ToolRegistry::execute`](crate::ToolRegistry::execute),
/// and across concurrent [`ToolRun`](crate::ToolRun)s. Calls a serial handler makes itself,
/// awaited inside its own task, are part of its turn and take turns among themselves; work it
/// moves to a task it spawns itself is not, and must not be awaited while the turn is held.
#[derive(Clone, Debug, Default)]
pub struct SerialLane(Arc<Mutex<()>>);

impl SerialLane {
    /// A new, free lane.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether two handles are the same lane.
    pub fn same_lane(&self, other: &SerialLane) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

tokio::task_local! {
    /// The turns held by the serial calls the current task runs inside.
    static HELD: Held;
}

/// Lanes held by enclosing serial calls, each with the inner lane their nested calls share
/// (`None` when none are: a concurrent call outside any serial one allocates nothing).
#[derive(Clone, Default)]
struct Held(Option<Arc<Vec<(SerialLane, SerialLane)>>>);

impl Held {
    fn current() -> Held {
        HELD.try_with(Held::clone).unwrap_or_default()
    }

    /// The lane a serial call on `lane` takes its turn on from here.
    fn turn_lane(&self, lane: &SerialLane) -> SerialLane {
        self.lanes()
            .find(|(held, _)| held.same_lane(lane))
            .map_or_else(|| lane.clone(), |(_, inner)| inner.clone())
    }

    /// These holdings plus `lane`, whose nested calls get a fresh inner lane.
    fn holding(&self, lane: &SerialLane) -> Held {
        let mut lanes: Vec<_> = self
            .lanes()
            .filter(|(held, _)| !held.same_lane(lane))
            .cloned()
            .collect();
        lanes.push((lane.clone(), SerialLane::new()));
        Held(Some(Arc::new(lanes)))
    }

    fn lanes(&self) -> impl Iterator<Item = &(SerialLane, SerialLane)> {
        self.0.iter().flat_map(|lanes| lanes.iter())
    }
}

/// The turn one call holds while its handler runs: a lane's guard for a serial call, nothing for
/// a concurrent one. Every task the call's handler runs in keeps the guard alive, so the turn
/// ends only when the last of them has ended (also when a timed-out handler is aborted later).
#[derive(Clone)]
pub(crate) struct Turn {
    guard: Option<Arc<OwnedMutexGuard<()>>>,
    held: Held,
}

impl Turn {
    /// Waits for a turn on `lane` (or on its inner lane when an enclosing call holds it).
    pub(crate) async fn take(lane: &SerialLane) -> Turn {
        let held = Held::current();
        let guard = Arc::clone(&held.turn_lane(lane).0).lock_owned().await;
        Turn {
            guard: Some(Arc::new(guard)),
            held: held.holding(lane),
        }
    }

    /// No turn of its own: a concurrent call, which passes on what its caller holds.
    pub(crate) fn none() -> Turn {
        Turn {
            guard: None,
            held: Held::current(),
        }
    }

    /// Runs `f` (one poll of a handler polled in its caller's task) inside this turn. A
    /// concurrent call's turn passes on what its caller holds, which is already in place in the
    /// caller's task: only a serial turn sets the holdings, for the duration of `f`.
    pub(crate) fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.guard.is_none() {
            return f();
        }
        HELD.sync_scope(self.held.clone(), f)
    }

    /// Runs `fut` (a handler's task) inside this turn.
    pub(crate) fn scope<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> + use<F> {
        let guard = self.guard.clone();
        HELD.scope(self.held.clone(), async move {
            let _turn = guard;
            fut.await
        })
    }
}
