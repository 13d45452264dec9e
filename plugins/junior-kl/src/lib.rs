//! junior-KL
