//! Job kinds integrated with Kueue through the jobframework: each is an adapter (the
//! `GenericJob` implementation, its webhook rules, and what its own controller does).

pub mod declarative;
pub mod external_job;
pub mod kueue_frameworks;
pub mod registry;
pub mod wrapped_job;
