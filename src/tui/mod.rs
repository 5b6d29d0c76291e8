//! `watch`: a terminal view of every job across the manager and its workers, drawn from
//! [`crate::model`]. Kept in parts that only meet through data: `view` (draws a model, never
//! calls the API), `app` (keys → state and commands), `actions` (the only writes) and `run`
//! (the loop that ties them to the model's source).

pub mod actions;
pub mod app;
pub mod columns;
#[cfg(test)]
mod frame_tests;
pub mod run;
pub mod view;
