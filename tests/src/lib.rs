//! Harness for the end-to-end tests (work in progress).
