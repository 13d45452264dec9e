//! Models for trlvr (work in progress).
