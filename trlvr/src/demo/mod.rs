//! What `trlvr demo` needs from the core: a synthetic task with two notations of the same
//! reasoning, so that a senior can drift into a shorthand its junior cannot read.

pub mod task;

pub use task::{Notation, Problem, SumTask, SumVerifier, notation_counts};
