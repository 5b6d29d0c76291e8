//! libFuzzer target over the admission webhooks of both kinds: AdmissionReview decoding,
//! defaulting and validation, through the same router the controller serves. Run it with
//! `hack/fuzz.sh` (cargo-fuzz, nightly); `cargo test` runs the committed corpus and a bounded
//! seeded form of it on stable (`src/controller/fuzz.rs`).
#![no_main]

use std::sync::LazyLock;

use kueue_ext::controller::fuzz::Harness;
use libfuzzer_sys::fuzz_target;

static HARNESS: LazyLock<Harness> = LazyLock::new(Harness::new);

fuzz_target!(|data: &[u8]| HARNESS.check(data));
