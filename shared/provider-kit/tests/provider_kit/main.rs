//! The provider kit's tests, in one test binary (decision 0054): as one binary
//! per file, each was linked against the whole dependency graph. nextest still runs every
//! test in its own process.

mod jwks;
mod proof;
mod stepup;
mod vectors;
