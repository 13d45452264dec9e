//! Math answer checking for trlvr (work in progress).
