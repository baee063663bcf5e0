//! Graphs and their executable instances.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::Mutex;

use crate::device::{self, DeviceGuard, DeviceId};
use crate::driver::{self, GraphExecHandle, GraphHandle};
use crate::error::{Error, Result};
use crate::stream::CudaStreamView;

/// A captured graph (`CUgraph`), made by [`Capture::end`](super::Capture::end).
/// Instantiate it to launch it; the graph itself can be dropped once
/// instantiated (memory it holds stays reserved while an executable of it
/// exists).
///
/// `Send`, not `Sync`: the driver does not synchronise calls on one graph.
#[derive(Debug)]
pub struct Graph {
    handle: GraphHandle,
    device: DeviceId,
    _not_sync: PhantomData<Cell<()>>,
}

impl Graph {
    /// Takes ownership of the graph a capture on `device` ended with.
    pub(super) fn from_capture(handle: GraphHandle, device: DeviceId) -> Self {
        Graph {
            handle,
            device,
            _not_sync: PhantomData,
        }
    }

    /// Instantiates the graph (`cuGraphInstantiateWithFlags`) on its device
    /// with `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`: memory the
    /// graph allocates from a driver pool (`cuda_async`) and does not free
    /// itself is freed when the executable is launched again, so it can be
    /// replayed any number of times (that memory is valid until the next
    /// launch).
    ///
    /// # Errors
    /// The driver's error.
    pub fn instantiate(&self) -> Result<GraphExec> {
        let _device = DeviceGuard::new(self.device)?;
        // SAFETY: we own the live graph; `&self` with `Graph: !Sync` keeps
        // other threads off it during the call.
        let handle = unsafe { driver::graph_instantiate(self.handle) }?;
        Ok(GraphExec {
            handle,
            device: self.device,
            launching: Mutex::new(()),
        })
    }

    /// Number of nodes in the graph (`cuGraphGetNodes`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn node_count(&self) -> Result<usize> {
        // SAFETY: as in `instantiate`.
        unsafe { driver::graph_node_count(self.handle) }
    }

    /// The device the graph was captured on.
    pub fn device(&self) -> DeviceId {
        self.device
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: we own the graph and nothing uses it after.
        if let Err(e) = unsafe { driver::graph_destroy(self.handle) } {
            log::error!("destroying graph {:#x}: {e}", self.handle.as_raw());
        }
    }
}

/// An executable graph (`CUgraphExec`), made by [`Graph::instantiate`] or
/// [`ExecPolicy::capture`](crate::exec_policy::ExecPolicy::capture):
/// launch it on a stream of its device as often as needed. Dropping it
/// while launches are pending is fine (the driver frees it once they are
/// done).
///
/// `Send + Sync`: launches from several threads take turns (a lock inside).
#[derive(Debug)]
pub struct GraphExec {
    handle: GraphExecHandle,
    device: DeviceId,
    /// The driver does not synchronise calls on one executable graph.
    launching: Mutex<()>,
}

impl GraphExec {
    /// Launches the graph on `stream` (`cuGraphLaunch`): its work runs in
    /// `stream` order, after the work queued before and after earlier
    /// launches of this graph.
    ///
    /// # Safety
    /// Every allocation the captured work uses that was not allocated
    /// during the capture itself is still live (not freed since the
    /// capture) and not used by other work at the same time: a replay
    /// writes again the addresses captured. Memory allocated during the
    /// capture through rmm's resources is kept reserved by the graph.
    ///
    /// # Errors
    /// [`Error::Logic`] for a stream of another device (nothing is
    /// launched); the driver's error.
    pub unsafe fn launch(&self, stream: CudaStreamView<'_>) -> Result<()> {
        self.check_device(stream)?;
        let _turn = self.launching.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: we own the live executable and hold its lock; the stream
        // is live for the view's lifetime; the caller's contract covers the
        // memory the nodes use.
        unsafe { driver::graph_launch(self.handle, stream.handle()) }
    }

    /// The device the graph runs on.
    pub fn device(&self) -> DeviceId {
        self.device
    }

    /// Refuses a stream of another device. One visible device: nothing to
    /// check.
    fn check_device(&self, stream: CudaStreamView<'_>) -> Result<()> {
        if device::device_count() <= 1 && self.device == DeviceId(0) {
            return Ok(());
        }
        // SAFETY: a view's stream is live for its lifetime.
        let theirs = DeviceId(unsafe { driver::stream_device(stream.handle()) }?);
        if theirs != self.device {
            return Err(Error::Logic(format!(
                "a graph of {} cannot be launched on {stream:?}, a stream of {theirs}",
                self.device
            )));
        }
        Ok(())
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        // SAFETY: we own the executable and nothing uses it after.
        if let Err(e) = unsafe { driver::graph_exec_destroy(self.handle) } {
            log::error!("destroying an executable graph: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn graphs_move_between_threads_and_executables_are_shared() {
        send::<Graph>();
        send_sync::<GraphExec>();
    }
}
