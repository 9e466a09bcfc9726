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
use std::sync::{Arc, OnceLock};

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

/// The turns held by enclosing serial calls, innermost first (`None` outside any serial call: a
/// concurrent call there allocates nothing).
#[derive(Clone, Default)]
struct Held(Option<Arc<Holding>>);

/// One enclosing serial call's turn: the lane it asked for, the guard of the lane it waited on
/// (that lane, or the inner lane of an enclosing turn on it), the inner lane that the serial
/// calls it makes itself on the same lane share (made when the first of them asks for it), and
/// the turns around it.
struct Holding {
    lane: SerialLane,
    _guard: OwnedMutexGuard<()>,
    inner: OnceLock<SerialLane>,
    outer: Held,
}

impl Held {
    fn current() -> Held {
        HELD.try_with(Held::clone).unwrap_or_default()
    }

    /// The lane a serial call on `lane` takes its turn on from here: the inner lane of the
    /// innermost turn held on `lane`, or `lane` itself.
    fn turn_lane(&self, lane: &SerialLane) -> Arc<Mutex<()>> {
        let mut at = self.0.as_deref();
        while let Some(holding) = at {
            if holding.lane.same_lane(lane) {
                return Arc::clone(&holding.inner.get_or_init(SerialLane::new).0);
            }
            at = holding.outer.0.as_deref();
        }
        Arc::clone(&lane.0)
    }
}

/// The turn one call holds while its handler runs: a lane's guard for a serial call, nothing for
/// a concurrent one. Every task the call's handler runs in keeps the guard alive, and so does
/// every call nested in it (its turn holds the turns around it), so the turn ends only when the
/// last of them has ended (also when a timed-out handler is aborted later).
#[derive(Clone)]
pub(crate) struct Turn {
    /// For a serial call, its own turn (with the ones around it); for a concurrent one, the
    /// turns its caller holds.
    held: Held,
    serial: bool,
}

impl Turn {
    /// Waits for a turn on `lane` (or on its inner lane when an enclosing call holds it). A
    /// free lane is taken at once, without queueing; a taken one is waited for in the lane's
    /// order (a lane's queue hands a released turn to the next waiter, so it is never free
    /// while anyone waits).
    pub(crate) async fn take(lane: &SerialLane) -> Turn {
        let outer = Held::current();
        let on = outer.turn_lane(lane);
        let guard = match Arc::clone(&on).try_lock_owned() {
            Ok(guard) => guard,
            Err(_) => on.lock_owned().await,
        };
        Turn {
            held: Held(Some(Arc::new(Holding {
                lane: lane.clone(),
                _guard: guard,
                inner: OnceLock::new(),
                outer,
            }))),
            serial: true,
        }
    }

    /// No turn of its own: a concurrent call, which passes on what its caller holds.
    pub(crate) fn none() -> Turn {
        Turn {
            held: Held::current(),
            serial: false,
        }
    }

    /// Runs `f` (one poll of a handler polled in its caller's task) inside this turn. A
    /// concurrent call's turn passes on what its caller holds, which is already in place in the
    /// caller's task: only a serial turn sets the holdings, for the duration of `f`.
    pub(crate) fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        if !self.serial {
            return f();
        }
        HELD.sync_scope(self.held.clone(), f)
    }

    /// Runs `fut` (a handler's task) inside this turn.
    /// The task holds this turn (and so the guard of a serial one) until it ends.
    pub(crate) fn scope<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> + use<F> {
        HELD.scope(self.held.clone(), fut)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex as StdMutex;

    use super::*;

    /// Taking a free lane at once never jumps the queue: a turn released while another call
    /// waits goes to that call, even if a new call asks before the waiting one has run again.
    #[tokio::test(flavor = "current_thread")]
    async fn a_released_turn_goes_to_the_call_waiting_for_it_not_to_a_newcomer() {
        let lane = SerialLane::new();
        let order = Arc::new(StdMutex::new(Vec::new()));
        let first = Turn::take(&lane).await;
        let waiting = tokio::spawn({
            let (lane, order) = (lane.clone(), Arc::clone(&order));
            async move {
                let _turn = Turn::take(&lane).await;
                order.lock().unwrap().push("waiting");
            }
        });
        // The waiting call queues for the lane.
        tokio::task::yield_now().await;
        drop(first);
        let newcomer = Turn::take(&lane).await;
        order.lock().unwrap().push("newcomer");
        drop(newcomer);
        waiting.await.unwrap();
        assert_eq!(*order.lock().unwrap(), ["waiting", "newcomer"]);
    }

    /// A serial call's own serial calls on the same lane share one inner lane, made when the
    /// first of them asks, and take turns on it; a call on another lane is not redirected.
    #[tokio::test(flavor = "current_thread")]
    async fn nested_calls_on_a_held_lane_share_its_inner_lane() {
        let lane = SerialLane::new();
        let other = SerialLane::new();
        let outer = Turn::take(&lane).await;
        let (a, b, c) = outer.enter(|| {
            let held = Held::current();
            (
                held.turn_lane(&lane),
                held.turn_lane(&lane),
                held.turn_lane(&other),
            )
        });
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &lane.0));
        assert!(Arc::ptr_eq(&c, &other.0));
        assert!(Arc::ptr_eq(&Held::current().turn_lane(&lane), &lane.0));
    }
}
