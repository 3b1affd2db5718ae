//! The running side of tasks: live task state shared by the executor's events and every
//! stream that follows the task.

mod budget;
mod lifecycle;
mod live;
mod refresh;
mod sink;
mod turn_writer;
mod watch;

pub(crate) use budget::BudgetState;
pub(crate) use lifecycle::direct_reply;
pub(crate) use live::{LiveTask, Registry, SharedEvent};
pub use sink::EventSink;
pub(crate) use watch::{
    at_settled, at_terminal, await_settled, changes, follow_live, follow_live_until,
};
