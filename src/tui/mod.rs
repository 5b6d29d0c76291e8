//! `watch`: a terminal view of every job across the manager and its workers. Kept in parts that
//! only meet through data: `source` (the watches, the only reads), `model` (the pure join),
//! `view` (draws a model, never calls the API), `app` (keys → state and commands), `actions`
//! (the only writes) and `run` (the loop that ties them).

pub mod actions;
pub mod app;
pub mod columns;
#[cfg(test)]
pub mod fixtures;
#[cfg(test)]
mod frame_tests;
pub mod model;
pub mod run;
pub mod snapshot;
pub mod source;
pub mod view;
