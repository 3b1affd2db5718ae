//! Ready-made agents: an echo agent for demos and load tests, and the conformance agent the
//! A2A TCK drives.

mod conformance;
mod echo;

pub use conformance::ConformanceAgent;
pub use echo::EchoAgent;
