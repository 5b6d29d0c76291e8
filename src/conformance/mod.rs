//! `conformance`: Kueue's jobframework contract, checked on a sandbox against any integrated
//! kind. The checks create the kind's sample in namespaces of their own and judge what the
//! cluster does with it; the verdicts are pure functions of the objects they observed.

pub mod catalog;
pub mod diff;
pub mod kinds;
pub mod report;
pub mod samples;
pub mod verdict;
