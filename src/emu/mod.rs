//! Emulated block devices (issue 4): models of the studies' hardware — 7200 rpm disks,
//! SATA and NVMe SSDs, NVRAM, RAM — that say how long each request should take.
//!
//! Only the models live here so far: pure, deterministic code with no I/O. The FUSE
//! daemon that serves image files as block devices (to come) asks a model how long a
//! request takes and delays its answer by that much.

pub mod model;

pub use model::{
    below_floor, model_by_name, predicted, predicted_set, DeviceModel, FixedParams, HddParams,
    Kind, Pattern, Prediction, RamParams, Request, Service, Workload, FUSE_FLOOR, MODEL_NAMES,
};
