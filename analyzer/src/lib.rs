//! The cltrap analyzer library.
